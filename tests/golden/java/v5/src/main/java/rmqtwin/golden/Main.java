package rmqtwin.golden;

import com.alibaba.fastjson2.JSON;
import com.alibaba.fastjson2.JSONFactory;
import com.alibaba.fastjson2.JSONWriter;
import com.alibaba.fastjson2.writer.FieldWriter;
import com.alibaba.fastjson2.writer.ObjectWriter;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigAndMappingSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PullMessageResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.SearchOffsetRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.SendMessageResponseHeader;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;

/** The 5.5.0 line (rocketmq-remoting / rocketmq-common 5.5.0, fastjson2): entry point of the golden-v5 jar. */
public final class Main extends Line {
    public static void main(String[] args) throws Exception {
        Golden.main(new Main(), args);
    }

    Main() {
        super(
            "org.apache.rocketmq.remoting.protocol.header.",
            "org.apache.rocketmq.broker.schedule.",
            "org.apache.rocketmq.remoting.protocol.header.namesrv.",
            "org.apache.rocketmq.remoting.protocol.body.",
            "org.apache.rocketmq.remoting.protocol.route.",
            "org.apache.rocketmq.remoting.protocol.heartbeat.",
            "org.apache.rocketmq.remoting.protocol.",
            "org.apache.rocketmq.remoting.protocol.admin.",
            "org.apache.rocketmq.remoting.protocol.subscription.",
            "org.apache.rocketmq.remoting.protocol.header.controller.",
            "org.apache.rocketmq.remoting.rpc.",
            "org.apache.rocketmq.common."
        );
    }

    /** fastjson2: the field writers of the class's ObjectWriter. */
    @Override
    List<String> bodyProperties(Class<?> cls) {
        List<String> names = new ArrayList<>();
        ObjectWriter<?> writer = JSONFactory.getDefaultObjectWriterProvider().getObjectWriter(cls);
        for (Object f : writer.getFieldWriters()) {
            names.add(((FieldWriter<?>) f).fieldName);
        }
        return names;
    }

    @Override
    String toJson(Object value, boolean browserCompatible) {
        return browserCompatible ? JSON.toJSONString(value, JSONWriter.Feature.BrowserCompatible) : JSON.toJSONString(value);
    }

    /** A 5.2+-style properties string: trailing separator. */
    @Override
    String producerProperties() {
        return "UNIQ_KEY\u0001AC110001000118B4AAC20A2B3C0000\u0002WAIT\u0001true\u0002TAGS\u0001TagA\u0002";
    }

    @Override
    byte[] routeStandard(RemotingSerializable route) {
        return ((TopicRouteData) route).encode(JSONWriter.Feature.BrowserCompatible, JSONWriter.Feature.MapSortField);
    }

    /** The 5.x broker registers its topics with the queue-mapping wrapper. */
    @Override
    RemotingSerializable registerWrapper(RemotingSerializable topicConfigWrapper) {
        TopicConfigAndMappingSerializeWrapper mapping =
            TopicConfigAndMappingSerializeWrapper.from((TopicConfigSerializeWrapper) topicConfigWrapper);
        mapping.setMappingDataVersion(Cases.dataVersion());
        return mapping;
    }

    /** 5.x-only header fields (RpcRequestHeader ns/nsd/oway, TopicRequestHeader lo, pull/send extras). */
    @Override
    void lineOnlyCommands(Vectors v) throws Exception {
        v.commandBoth("request.PULL_MESSAGE.5x_fields", t -> Cases.req(RequestCode.PULL_MESSAGE,
            Cases.fill(new PullMessageRequestHeader(), "consumerGroup", "cg", "topic", "TopicTest", "queueId", 3,
                "queueOffset", 128L, "maxMsgNums", 32, "sysFlag", 2, "commitOffset", 0L,
                "suspendTimeoutMillis", 20000L, "subVersion", 1700000000000L, "expressionType", "TAG",
                "maxMsgBytes", 1048576, "requestSource", 1, "proxyFrowardClientId", "127.0.0.1@proxy",
                "liteTopic", "lite-1", "bname", "broker-a", "ns", "ns1", "nsd", true, "oway", false, "lo", true),
            33, t), PullMessageRequestHeader.class);
        v.commandBoth("request.SEARCH_OFFSET_BY_TIMESTAMP.boundary", t -> Cases.req(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            Cases.fill(new SearchOffsetRequestHeader(), "topic", "TopicTest", "queueId", 2, "timestamp", Cases.BORN,
                "boundaryType", BoundaryType.UPPER, "bname", "broker-a"), 44, t),
            SearchOffsetRequestHeader.class);
        v.commandBoth("response.PULL_MESSAGE.5x_fields", t -> Cases.resp(ResponseCode.PULL_NOT_FOUND,
            "OFFSET_OVERFLOW_ONE", Cases.fill(new PullMessageResponseHeader(), "suggestWhichBrokerId", 1L,
                "nextBeginOffset", 128L, "minOffset", 0L, "maxOffset", 128L, "offsetDelta", 3L,
                "topicSysFlag", 1, "groupSysFlag", 2, "forbiddenType", 0), 33, t), PullMessageResponseHeader.class);
        v.commandBoth("response.SEND_MESSAGE.5x_fields", t -> {
            RemotingCommand c = Cases.resp(ResponseCode.SUCCESS, null, Cases.fill(new SendMessageResponseHeader(),
                "msgId", "7F00000100002A9F00000000000F1206,7F00000100002A9F00000000000F1306", "queueId", 0,
                "queueOffset", 9L, "transactionId", "AC110001000118B4AAC20A2B3C0000",
                "batchUniqId", "AC110001000118B4AAC20A2B3C0001", "recallHandle", "handle-1"), 21, t);
            c.addExtField("MSG_REGION", "DefaultRegion");
            c.addExtField("TRACE_ON", "false");
            return c;
        }, SendMessageResponseHeader.class);
    }
}
