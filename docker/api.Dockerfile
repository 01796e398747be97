# API image: the HTTP Judge API (`rcjudge serve --only api`, FastAPI + uvicorn; docs/api.md), on CPU.
# The same image serves the verdict screen: --entrypoint rcjudge … serve --host 0.0.0.0.
FROM python:3.11-slim
WORKDIR /opt/rcjudge
COPY pyproject.toml README.md ./
COPY rcjudge rcjudge
COPY judge judge
COPY models models
COPY verdict verdict
COPY bench bench
COPY configs configs
RUN pip install --no-cache-dir .
ENV RCJUDGE_CONFIGS=/opt/rcjudge/configs
RUN useradd --create-home --uid 10001 rcjudge
USER 10001
EXPOSE 8000
ENTRYPOINT ["rcjudge", "serve", "--only", "api", "--host", "0.0.0.0", "--port", "8000"]
