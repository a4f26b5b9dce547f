# Real Apache RocketMQ with the official apache/rocketmq image's conventions (ROCKETMQ_HOME, WORKDIR bin,
# user rocketmq uid 3000, `sh mqnamesrv`, `sh mqbroker -n ... -c ...`, JAVA_OPT_EXT), built from Debian's
# JRE 17 and the same Maven Central jars conformance/launcher.py runs (context: lib/, bin/).
ARG BASE=rmqtwin-base:bookworm
FROM ${BASE}
RUN apt-get update -qq \
    && mkdir -p /usr/share/man/man1 \
    && apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless >/dev/null \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /usr/share/doc /usr/share/man /usr/share/locale
ARG ROCKETMQ_VERSION=5.5.0
ENV ROCKETMQ_VERSION=${ROCKETMQ_VERSION} ROCKETMQ_HOME=/home/rocketmq/rocketmq-${ROCKETMQ_VERSION}
RUN groupadd --gid 3000 rocketmq && useradd --uid 3000 --gid 3000 --create-home --home-dir /home/rocketmq rocketmq \
    && mkdir -p /home/rocketmq/store /home/rocketmq/logs && chown -R rocketmq:rocketmq /home/rocketmq
COPY lib ${ROCKETMQ_HOME}/lib
COPY bin ${ROCKETMQ_HOME}/bin
USER rocketmq
WORKDIR ${ROCKETMQ_HOME}/bin
EXPOSE 9876 10909 10911 10912
