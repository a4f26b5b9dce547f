package rmqtwin.golden;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.JavaBeanSerializer;
import com.alibaba.fastjson.serializer.SerializeConfig;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;

/** The 4.9.8 line (rocketmq-remoting / rocketmq-common 4.9.8, fastjson 1.x): entry point of the golden-v4 jar. */
public final class Main extends Line {
    public static void main(String[] args) throws Exception {
        Golden.main(new Main(), args);
    }

    Main() {
        super(
            "org.apache.rocketmq.common.protocol.header.",
            "org.apache.rocketmq.store.schedule.",
            "org.apache.rocketmq.common.protocol.header.namesrv.",
            "org.apache.rocketmq.common.protocol.body.",
            "org.apache.rocketmq.common.protocol.route.",
            "org.apache.rocketmq.common.protocol.heartbeat.",
            "org.apache.rocketmq.common.protocol.",
            "org.apache.rocketmq.common.admin.",
            "org.apache.rocketmq.common.subscription.",
            "org.apache.rocketmq.common.rpc.",
            "org.apache.rocketmq.common."
        );
    }

    /** fastjson 1.x: the getters JavaBeanSerializer writes for the class (values of a fresh instance). */
    @Override
    List<String> bodyProperties(Class<?> cls) throws Exception {
        JavaBeanSerializer writer = (JavaBeanSerializer) SerializeConfig.getGlobalInstance().getObjectWriter(cls);
        Object instance;
        try {
            instance = cls.getDeclaredConstructor().newInstance();
        } catch (NoSuchMethodException e) {
            // a bean built only through an all-fields constructor (ProducerInfo): its fields left at their defaults
            instance = unsafe().allocateInstance(cls);
        }
        return new ArrayList<>(writer.getFieldValuesMap(instance).keySet());
    }

    private static sun.misc.Unsafe unsafe() throws ReflectiveOperationException {
        java.lang.reflect.Field field = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        field.setAccessible(true);
        return (sun.misc.Unsafe) field.get(null);
    }

    @Override
    String toJson(Object value, boolean browserCompatible) {
        return browserCompatible ? JSON.toJSONString(value, SerializerFeature.BrowserCompatible) : JSON.toJSONString(value);
    }

    /** A 4.9-style properties string: no trailing separator. */
    @Override
    String producerProperties() {
        return "UNIQ_KEY\u0001AC110001000118B4AAC20A2B3C0000\u0002WAIT\u0001true\u0002TAGS\u0001TagA";
    }

    @Override
    byte[] routeStandard(RemotingSerializable route) {
        return ((TopicRouteData) route).encode(SerializerFeature.BrowserCompatible, SerializerFeature.QuoteFieldNames,
            SerializerFeature.SkipTransientField, SerializerFeature.MapSortField);
    }

    @Override
    RemotingSerializable registerWrapper(RemotingSerializable topicConfigWrapper) {
        return topicConfigWrapper;
    }

    @Override
    void lineOnlyCommands(Vectors v) {
        // every 4.9.8 request vector is one the 5.5.0 classes build as well
    }
}
