# rmqtwin: `rmqtwin serve` (the twin's namesrv + broker) or `rmqtwin proxy` (the recording proxy).
# Built by scripts/setup.d/40-docker.sh from the Debian base image (debootstrap) and the wheels it builds
# on the host (context: wheels/), so nothing is fetched inside the build but Debian's python3.
ARG BASE=rmqtwin-base:bookworm

FROM ${BASE} AS python
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends python3 >/dev/null \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /usr/share/doc /usr/share/man /usr/share/locale

FROM python AS venv
# Marks this stage's image, left untagged by the build, for 40-docker.sh's prune.
LABEL org.rmqtwin.stage=venv
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
COPY wheels /wheels
RUN python3 -m venv /opt/rmqtwin \
    && /opt/rmqtwin/bin/pip install -q --no-index --find-links /wheels --no-compile rmqtwin \
    && /opt/rmqtwin/bin/pip uninstall -q -y pip setuptools \
    && find /opt/rmqtwin -name '__pycache__' -prune -exec rm -rf {} + \
    && find /opt/rmqtwin -path '*/tests' -prune -exec rm -rf {} + \
    && find /opt/rmqtwin -path '*/twisted/*' -type d -name test -prune -exec rm -rf {} +
# Bytecode for exactly what a started twin, a proxy in front of it and the healthcheck's probe import,
# written by starting them once here (which also proves the image serves a route): the image's user
# cannot write bytecode, and compiling those modules from source cost every container start and every
# healthcheck seconds. The rest of the venv stays source only.
RUN set -e; cd /tmp; export PATH=/opt/rmqtwin/bin:$PATH; \
    rmqtwin serve --host 127.0.0.1 --namesrv-port 9876 --broker-port 10911 --store /tmp/warm \
        >/tmp/serve.log 2>&1 & twin=$!; \
    rmqtwin proxy --upstream 127.0.0.1:9876 --host 127.0.0.1 --port 19876 --broker-port 20911 \
        --capture /tmp/warm.rmqcap >/tmp/proxy.log 2>&1 & proxy=$!; \
    ok=0; for _ in $(seq 240); do \
        if python3 -m rmqtwin.probe 127.0.0.1:19876 >/dev/null 2>&1; then ok=1; break; fi; sleep 0.25; done; \
    kill $proxy $twin; wait $proxy $twin || true; \
    [ $ok = 1 ] || { cat /tmp/serve.log /tmp/proxy.log; exit 1; }; \
    rm -rf /tmp/warm /tmp/warm.rmqcap /tmp/*.log

FROM python
COPY --from=venv /opt/rmqtwin /opt/rmqtwin
RUN useradd --uid 1000 --create-home rmqtwin && mkdir -p /data /captures && chown rmqtwin /data /captures
ENV PATH=/opt/rmqtwin/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 RMQTWIN_NAMESRV_PORT=9876
USER rmqtwin
WORKDIR /data
VOLUME ["/data", "/captures"]
EXPOSE 9876 10909 10911
# Healthy = the name server on RMQTWIN_NAMESRV_PORT routes TBW102 to a broker (rmqtwin.probe), which
# for `serve` means the broker has registered and for `proxy` that the upstream cluster answers.
HEALTHCHECK --interval=5s --timeout=3s --retries=30 \
    CMD ["sh", "-c", "exec python3 -m rmqtwin.probe 127.0.0.1:$RMQTWIN_NAMESRV_PORT >/dev/null"]
ENTRYPOINT ["rmqtwin"]
CMD ["serve", "--host", "0.0.0.0", "--store", "/data/store"]
