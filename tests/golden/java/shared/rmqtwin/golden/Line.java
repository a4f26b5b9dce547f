package rmqtwin.golden;

import java.util.List;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;

/**
 * What really differs between the RocketMQ lines the golden build covers (4.9.x and 5.x), implemented
 * once per line module by its {@code Main}, a subclass. Everything else is shared source: the classes that kept
 * their packages are used directly, and {@code Cases} (a template filtered with the module's
 * package names) builds the vectors from the classes that moved.
 */
abstract class Line {
    private final String[] packages;

    /** The packages searched, in order, for a class named by its simple name (headers, bodies). */
    Line(String... packages) {
        this.packages = packages;
    }

    /** The bean properties this line's JSON library serializes for a body class. */
    abstract List<String> bodyProperties(Class<?> cls) throws Exception;

    /** {@code value} written by this line's JSON library (fastjson 1.x or fastjson2), optionally BrowserCompatible. */
    abstract String toJson(Object value, boolean browserCompatible);

    /** A properties string as this line's producer puts it in header {@code i} / {@code properties}. */
    abstract String producerProperties();

    /** The namesrv's encoding of a TopicRouteData for request version >= V4_9_4 or acceptStandardJsonOnly. */
    abstract byte[] routeStandard(RemotingSerializable route);

    /** The topic-config wrapper as this line's broker registers it (5.x: with the queue-mapping members). */
    abstract RemotingSerializable registerWrapper(RemotingSerializable topicConfigWrapper);

    /** Command vectors only this line's classes can build (added after the common requests). */
    abstract void lineOnlyCommands(Vectors v) throws Exception;

    /** The release of the classes on the classpath, e.g. "4.9.8" for MQVersion V4_9_8. */
    String rocketmq() {
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION).substring(1).replace('_', '.');
    }

    Class<?> resolve(String simpleName) throws ClassNotFoundException {
        for (String p : packages) {
            try {
                return Class.forName(p + simpleName);
            } catch (ClassNotFoundException e) {
                // next package
            }
        }
        throw new ClassNotFoundException(simpleName + " in RocketMQ " + rocketmq());
    }
}
