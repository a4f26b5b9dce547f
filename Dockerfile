# rmqtwin as a container: `rmqtwin serve` (the fake namesrv + broker) or `rmqtwin proxy`.
FROM python:3.11-slim
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY rmqtwin ./rmqtwin
COPY codec ./codec
COPY fakes ./fakes
COPY store_mirror ./store_mirror
COPY proxy ./proxy
COPY conformance ./conformance
COPY spark ./spark
RUN pip install --no-cache-dir . && useradd --create-home rmqtwin && mkdir -p /data /captures \
    && chown rmqtwin /data /captures
USER rmqtwin
WORKDIR /data
ENTRYPOINT ["rmqtwin"]
CMD ["serve", "--host", "0.0.0.0", "--store", "/data/store"]
