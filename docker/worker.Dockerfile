# GPU worker image: CUDA + vLLM (the base) + rcjudge with the gpu extra, installed under
# constraints/vllm.txt (the vLLM tier's tested versions; the base tag is its vllm pin), and
# `pip check` so an image whose pins do not resolve together fails at build.
# Entry: `rcjudge batch` (docker run … rcjudge-worker SOURCE --judge VERSION --ray-address …);
# a Ray node of the same image: --entrypoint ray … start --address=HEAD:6379 --block.
FROM vllm/vllm-openai:v0.32.0
WORKDIR /opt/rcjudge
COPY pyproject.toml README.md ./
COPY constraints constraints
COPY rcjudge rcjudge
COPY judge judge
COPY models models
COPY verdict verdict
COPY bench bench
COPY configs configs
RUN pip install --no-cache-dir -c constraints/vllm.txt -e '.[gpu]' && pip check
ENV RCJUDGE_CONFIGS=/opt/rcjudge/configs \
    RCJUDGE_MODELS=/models \
    RAY_AUTH_MODE=disabled
ENTRYPOINT ["rcjudge", "batch"]
CMD ["--help"]
