#!/bin/sh
# runserver.sh MAIN-CLASS ARGS...: one RocketMQ JVM, as apache/rocketmq's bin/runserver.sh and
# runbroker.sh start it: default heap, the Java 17 opens the store needs, then JAVA_OPT_EXT (last, so
# its -Xms/-Xmx win), the lib/ class path and the main class with the caller's arguments.
main=$1
shift
exec java -server ${JAVA_OPT:--Xms512m -Xmx512m -XX:MaxDirectMemorySize=512m} -XX:+UseG1GC \
  -XX:-OmitStackTraceInFastThrow \
  --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED \
  --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED \
  --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED \
  --add-opens=java.base/java.net=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
  --add-exports=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/jdk.internal.misc=ALL-UNNAMED \
  --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED --add-exports=java.base/jdk.internal.ref=ALL-UNNAMED \
  --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED \
  -Drocketmq.home.dir="$ROCKETMQ_HOME" ${JAVA_OPT_EXT} -cp "$ROCKETMQ_HOME/lib/*" "$main" "$@"
