# GPU worker image: CUDA + vLLM + rcjudge. Not needed for the local path (make demo / make test).
FROM vllm/vllm-openai:v0.11.0
WORKDIR /opt/rcjudge
COPY pyproject.toml README.md ./
COPY judge judge
COPY models models
COPY verdict verdict
COPY bench bench
COPY configs configs
RUN pip install --no-cache-dir -e '.[gpu]'
ENV RCJUDGE_CONFIGS=/opt/rcjudge/configs
ENTRYPOINT ["rcjudge"]
