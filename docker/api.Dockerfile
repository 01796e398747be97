# API image: the verdict screen and its JSON routes (`rcjudge serve`, FastAPI + uvicorn), on CPU.
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
EXPOSE 8765
ENTRYPOINT ["rcjudge", "serve", "--host", "0.0.0.0", "--port", "8765"]
CMD ["--help"]
