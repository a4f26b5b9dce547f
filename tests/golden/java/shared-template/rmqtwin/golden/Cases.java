package rmqtwin.golden;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import ${rocketmq.dataversion.package}.DataVersion;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import ${rocketmq.admin.package}.ConsumeStats;
import ${rocketmq.admin.package}.OffsetWrapper;
import ${rocketmq.admin.package}.TopicOffset;
import ${rocketmq.admin.package}.TopicStatsTable;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import ${rocketmq.protocol.package}.RequestCode;
import ${rocketmq.protocol.package}.ResponseCode;
import ${rocketmq.protocol.package}.body.ClusterInfo;
import ${rocketmq.protocol.package}.body.CMResult;
import ${rocketmq.protocol.package}.body.CheckClientRequestBody;
import ${rocketmq.protocol.package}.body.ConsumeMessageDirectlyResult;
import ${rocketmq.protocol.package}.body.GetConsumerStatusBody;
import ${rocketmq.protocol.package}.body.Connection;
import ${rocketmq.protocol.package}.body.ConsumeStatus;
import ${rocketmq.protocol.package}.body.ConsumerConnection;
import ${rocketmq.protocol.package}.body.ConsumerRunningInfo;
import ${rocketmq.protocol.package}.body.GroupList;
import ${rocketmq.protocol.package}.body.LockBatchResponseBody;
import ${rocketmq.protocol.package}.body.ProcessQueueInfo;
import ${rocketmq.protocol.package}.body.ProducerConnection;
import ${rocketmq.protocol.package}.body.QueryConsumeTimeSpanBody;
import ${rocketmq.protocol.package}.body.QueueTimeSpan;
import ${rocketmq.protocol.package}.body.ResetOffsetBody;
import ${rocketmq.protocol.package}.body.SubscriptionGroupWrapper;
import ${rocketmq.protocol.package}.header.GetConsumerListByGroupResponseBody;
import ${rocketmq.protocol.package}.body.ConsumerOffsetSerializeWrapper;
import ${rocketmq.protocol.package}.body.KVTable;
import ${rocketmq.protocol.package}.body.LockBatchRequestBody;
import ${rocketmq.protocol.package}.body.RegisterBrokerBody;
import ${rocketmq.protocol.package}.body.TopicConfigSerializeWrapper;
import ${rocketmq.protocol.package}.body.TopicList;
import ${rocketmq.protocol.package}.body.ProducerInfo;
import ${rocketmq.protocol.package}.body.ProducerTableInfo;
import ${rocketmq.schedule.package}.DelayOffsetSerializeWrapper;
import ${rocketmq.protocol.package}.body.UnlockBatchRequestBody;
import ${rocketmq.protocol.package}.header.CheckTransactionStateRequestHeader;
import ${rocketmq.protocol.package}.header.SearchOffsetRequestHeader;
import ${rocketmq.protocol.package}.header.GetMinOffsetRequestHeader;
import ${rocketmq.protocol.package}.header.GetEarliestMsgStoretimeRequestHeader;
import ${rocketmq.protocol.package}.header.GetProducerConnectionListRequestHeader;
import ${rocketmq.protocol.package}.header.ResetOffsetRequestHeader;
import ${rocketmq.protocol.package}.header.GetConsumerRunningInfoRequestHeader;
import ${rocketmq.protocol.package}.header.GetMinOffsetResponseHeader;
import ${rocketmq.protocol.package}.header.GetEarliestMsgStoretimeResponseHeader;
import ${rocketmq.protocol.package}.header.SearchOffsetResponseHeader;
import ${rocketmq.protocol.package}.header.QueryMessageResponseHeader;
import ${rocketmq.protocol.package}.header.GetBrokerConfigResponseHeader;
import ${rocketmq.protocol.package}.header.namesrv.DeleteTopicFromNamesrvRequestHeader;
import ${rocketmq.protocol.package}.header.namesrv.PutKVConfigRequestHeader;
import ${rocketmq.protocol.package}.header.ConsumerSendMsgBackRequestHeader;
import ${rocketmq.protocol.package}.header.CreateTopicRequestHeader;
import ${rocketmq.protocol.package}.header.DeleteTopicRequestHeader;
import ${rocketmq.protocol.package}.header.EndTransactionRequestHeader;
import ${rocketmq.protocol.package}.header.GetConsumeStatsRequestHeader;
import ${rocketmq.protocol.package}.header.GetConsumerConnectionListRequestHeader;
import ${rocketmq.protocol.package}.header.GetConsumerListByGroupRequestHeader;
import ${rocketmq.protocol.package}.header.GetMaxOffsetRequestHeader;
import ${rocketmq.protocol.package}.header.GetMaxOffsetResponseHeader;
import ${rocketmq.protocol.package}.header.GetTopicStatsInfoRequestHeader;
import ${rocketmq.protocol.package}.header.NotifyConsumerIdsChangedRequestHeader;
import ${rocketmq.protocol.package}.header.PullMessageRequestHeader;
import ${rocketmq.protocol.package}.header.PullMessageResponseHeader;
import ${rocketmq.protocol.package}.header.QueryConsumerOffsetRequestHeader;
import ${rocketmq.protocol.package}.header.QueryConsumerOffsetResponseHeader;
import ${rocketmq.protocol.package}.header.QueryMessageRequestHeader;
import ${rocketmq.protocol.package}.header.SendMessageRequestHeader;
import ${rocketmq.protocol.package}.header.SendMessageRequestHeaderV2;
import ${rocketmq.protocol.package}.header.SendMessageResponseHeader;
import ${rocketmq.protocol.package}.header.UnregisterClientRequestHeader;
import ${rocketmq.protocol.package}.header.UpdateConsumerOffsetRequestHeader;
import ${rocketmq.protocol.package}.header.ViewMessageRequestHeader;
import ${rocketmq.protocol.package}.header.namesrv.GetKVConfigRequestHeader;
import ${rocketmq.protocol.package}.header.namesrv.GetKVConfigResponseHeader;
import ${rocketmq.protocol.package}.header.namesrv.GetRouteInfoRequestHeader;
import ${rocketmq.protocol.package}.header.namesrv.RegisterBrokerRequestHeader;
import ${rocketmq.protocol.package}.header.namesrv.RegisterBrokerResponseHeader;
import ${rocketmq.protocol.package}.heartbeat.ConsumeType;
import ${rocketmq.protocol.package}.heartbeat.ConsumerData;
import ${rocketmq.protocol.package}.heartbeat.HeartbeatData;
import ${rocketmq.protocol.package}.heartbeat.MessageModel;
import ${rocketmq.protocol.package}.heartbeat.ProducerData;
import ${rocketmq.protocol.package}.heartbeat.SubscriptionData;
import ${rocketmq.protocol.package}.route.BrokerData;
import ${rocketmq.protocol.package}.route.QueueData;
import ${rocketmq.protocol.package}.route.TopicRouteData;
import ${rocketmq.subscription.package}.SubscriptionGroupConfig;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * The golden vectors of one RocketMQ line, built from its real classes the way its client, namesrv or
 * broker builds them. This file is a template: the protocol classes moved from org.apache.rocketmq.common
 * to org.apache.rocketmq.remoting.protocol in 5.x, so Maven fills in each module's rocketmq.*.package
 * properties in the imports and compiles the result into that module; what else differs between the
 * lines is asked of the module's {@link Line}.
 */
final class Cases {
    static final int VERSION = MQVersion.CURRENT_VERSION;
    static final long BORN = Messages.BORN;

    private final Line line;

    Cases(Line line) {
        this.line = line;
    }

    static <T> T fill(T obj, Object... kv) {
        return Vectors.fill(obj, kv);
    }

    static RemotingCommand req(int code, CommandCustomHeader header, int opaque, SerializeType type) {
        return Vectors.request(code, header, VERSION, opaque, type);
    }

    static RemotingCommand resp(int code, String remark, CommandCustomHeader header, int opaque,
        SerializeType type) {
        RemotingCommand cmd = RemotingCommand.createResponseCommand(code, remark);
        if (header != null) {
            // As a processor does: createResponseCommand(Class) then fill readCustomHeader().
            cmd = RemotingCommand.createResponseCommand(header.getClass());
            cmd.setCode(code);
            cmd.setRemark(remark);
            Vectors.fill(cmd, "customHeader", header);
        }
        cmd.setVersion(VERSION);
        cmd.setOpaque(opaque);
        cmd.setSerializeTypeCurrentRPC(type);
        return cmd;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The header class a client of this line sends with a code that 4.9.x clients send without one
     * (5.x added e.g. HeartbeatRequestHeader); null where the line has no such class.
     */
    Class<? extends CommandCustomHeader> clientHeader(String simpleName) {
        try {
            return line.resolve(simpleName).asSubclass(CommandCustomHeader.class);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    static CommandCustomHeader newHeader(Class<? extends CommandCustomHeader> cls) throws Exception {
        return cls == null ? null : cls.getDeclaredConstructor().newInstance();
    }

    void generate(Path out) throws Exception {
        Vectors v = new Vectors(line.rocketmq(), VERSION);
        requests(v);
        responses(v);
        Messages.vectors(v);
        bodies(v);
        v.write(out);
    }

    SendMessageRequestHeader sendHeader(String topic, boolean batch) {
        return fill(new SendMessageRequestHeader(), "producerGroup", "please_rename_unique_group_name",
            "topic", topic, "defaultTopic", "TBW102", "defaultTopicQueueNums", 4, "queueId", 1,
            "sysFlag", 0, "bornTimestamp", BORN, "flag", 0, "properties", batch ? "WAIT\u0001true" : line.producerProperties(),
            "reconsumeTimes", 0, "unitMode", false, "batch", batch, "bname", "broker-a");
    }

    void requests(Vectors v) throws Exception {
        // §12 of the protocol sheet, in order, then REGISTER_BROKER, GET_KV_CONFIG and the broker-to-client codes.
        v.commandBoth("request.GET_ROUTEINFO_BY_TOPIC", t -> req(RequestCode.GET_ROUTEINFO_BY_TOPIC,
            fill(new GetRouteInfoRequestHeader(), "topic", "TopicTest"), 1, t), GetRouteInfoRequestHeader.class);
        v.commandBoth("request.GET_ROUTEINFO_BY_TOPIC.accept_standard_json", t -> req(RequestCode.GET_ROUTEINFO_BY_TOPIC,
            fill(new GetRouteInfoRequestHeader(), "topic", "%RETRY%cg", "acceptStandardJsonOnly", true), 2, t),
            GetRouteInfoRequestHeader.class);
        v.commandBoth("request.SEND_MESSAGE_V2", t -> {
            RemotingCommand c = req(RequestCode.SEND_MESSAGE_V2,
                SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(sendHeader("TopicTest", false)), 3, t);
            c.setBody(utf8("Hello RocketMQ \u00fc\u20ac\u4e2d"));
            return c;
        }, SendMessageRequestHeaderV2.class);
        v.commandBoth("request.SEND_MESSAGE", t -> {
            RemotingCommand c = req(RequestCode.SEND_MESSAGE, sendHeader("TopicTest", false), 4, t);
            c.setBody(utf8("v1 names"));
            return c;
        }, SendMessageRequestHeader.class);
        v.commandBoth("request.HEART_BEAT", t -> {
            RemotingCommand c = req(RequestCode.HEART_BEAT, newHeader(clientHeader("HeartbeatRequestHeader")), 5, t);
            c.setBody(heartbeat().encode());
            return c;
        }, clientHeader("HeartbeatRequestHeader"));
        v.commandBoth("request.PULL_MESSAGE", t -> req(RequestCode.PULL_MESSAGE, fill(new PullMessageRequestHeader(),
            "consumerGroup", "cg", "topic", "TopicTest", "queueId", 3, "queueOffset", 128L, "maxMsgNums", 32,
            "sysFlag", 3, "commitOffset", 120L, "suspendTimeoutMillis", 15000L, "subscription", "TagA || TagB",
            "subVersion", 1700000000000L, "expressionType", "TAG", "bname", "broker-a"), 6, t),
            PullMessageRequestHeader.class);
        v.commandBoth("request.UPDATE_CONSUMER_OFFSET.oneway", t -> {
            RemotingCommand c = req(RequestCode.UPDATE_CONSUMER_OFFSET, fill(new UpdateConsumerOffsetRequestHeader(),
                "consumerGroup", "cg", "topic", "TopicTest", "queueId", 0, "commitOffset", 42L, "bname", "broker-a"), 7, t);
            c.markOnewayRPC();
            return c;
        }, UpdateConsumerOffsetRequestHeader.class);
        v.commandBoth("request.QUERY_CONSUMER_OFFSET", t -> req(RequestCode.QUERY_CONSUMER_OFFSET,
            fill(new QueryConsumerOffsetRequestHeader(), "consumerGroup", "cg", "topic", "TopicTest", "queueId", 2,
                "bname", "broker-a"), 8, t), QueryConsumerOffsetRequestHeader.class);
        v.commandBoth("request.GET_CONSUMER_LIST_BY_GROUP", t -> req(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
            fill(new GetConsumerListByGroupRequestHeader(), "consumerGroup", "cg"), 9, t),
            GetConsumerListByGroupRequestHeader.class);
        v.commandBoth("request.GET_MAX_OFFSET", t -> req(RequestCode.GET_MAX_OFFSET,
            fill(new GetMaxOffsetRequestHeader(), "topic", "TopicTest", "queueId", 1, "bname", "broker-a"), 10, t),
            GetMaxOffsetRequestHeader.class);
        v.commandBoth("request.UNREGISTER_CLIENT", t -> req(RequestCode.UNREGISTER_CLIENT,
            fill(new UnregisterClientRequestHeader(), "clientID", "127.0.0.1@4242#1234567", "producerGroup",
                "CLIENT_INNER_PRODUCER"), 11, t), UnregisterClientRequestHeader.class);
        v.commandBoth("request.CONSUMER_SEND_MSG_BACK", t -> req(RequestCode.CONSUMER_SEND_MSG_BACK,
            fill(new ConsumerSendMsgBackRequestHeader(), "offset", 123456L, "group", "cg", "delayLevel", 0,
                "originMsgId", "AC110001000118B4AAC20A2B3C0000", "originTopic", "TopicTest", "unitMode", false,
                "maxReconsumeTimes", 16, "bname", "broker-a"), 12, t), ConsumerSendMsgBackRequestHeader.class);
        v.commandBoth("request.GET_BROKER_CLUSTER_INFO", t -> req(RequestCode.GET_BROKER_CLUSTER_INFO, null, 13, t), null);
        v.commandBoth("request.UPDATE_AND_CREATE_TOPIC", t -> req(RequestCode.UPDATE_AND_CREATE_TOPIC,
            fill(new CreateTopicRequestHeader(), "topic", "NewTopic", "defaultTopic", "TBW102", "readQueueNums", 8,
                "writeQueueNums", 8, "perm", 6, "topicFilterType", "SINGLE_TAG", "topicSysFlag", 0, "order", false),
            14, t), CreateTopicRequestHeader.class);
        v.commandBoth("request.GET_ALL_TOPIC_LIST_FROM_NAMESERVER", t -> req(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
            null, 15, t), null);
        v.commandBoth("request.GET_BROKER_RUNTIME_INFO", t -> req(RequestCode.GET_BROKER_RUNTIME_INFO, null, 16, t), null);
        v.commandBoth("request.GET_TOPIC_STATS_INFO", t -> req(RequestCode.GET_TOPIC_STATS_INFO,
            fill(new GetTopicStatsInfoRequestHeader(), "topic", "TopicTest"), 17, t), GetTopicStatsInfoRequestHeader.class);
        v.commandBoth("request.GET_CONSUME_STATS", t -> req(RequestCode.GET_CONSUME_STATS,
            fill(new GetConsumeStatsRequestHeader(), "consumerGroup", "cg", "topic", "TopicTest"), 18, t),
            GetConsumeStatsRequestHeader.class);
        v.commandBoth("request.GET_CONSUMER_CONNECTION_LIST", t -> req(RequestCode.GET_CONSUMER_CONNECTION_LIST,
            fill(new GetConsumerConnectionListRequestHeader(), "consumerGroup", "cg"), 19, t),
            GetConsumerConnectionListRequestHeader.class);
        v.commandBoth("request.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", t -> {
            RemotingCommand c = req(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, null, 20, t);
            c.setBody(RemotingSerializable.encode(fill(new SubscriptionGroupConfig(), "groupName", "cg")));
            return c;
        }, null);
        v.commandBoth("request.SEND_BATCH_MESSAGE", t -> {
            RemotingCommand c = req(RequestCode.SEND_BATCH_MESSAGE,
                SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(sendHeader("TopicTest", true)), 21, t);
            c.setBody(MessageDecoder.encodeMessages(Messages.batch()));
            return c;
        }, SendMessageRequestHeaderV2.class);
        v.commandBoth("request.END_TRANSACTION.oneway", t -> {
            RemotingCommand c = req(RequestCode.END_TRANSACTION, fill(new EndTransactionRequestHeader(),
                "producerGroup", "tx_group", "tranStateTableOffset", 5L, "commitLogOffset", 987654L,
                "commitOrRollback", MessageSysFlag.TRANSACTION_COMMIT_TYPE, "fromTransactionCheck", true,
                "msgId", "AC110001000118B4AAC20A2B3C0000", "transactionId", "AC110001000118B4AAC20A2B3C0000",
                "bname", "broker-a"), 22, t);
            c.setRemark("executeLocalTransactionBranch exception: \u00e9chec");
            c.markOnewayRPC();
            return c;
        }, EndTransactionRequestHeader.class);
        v.commandBoth("request.LOCK_BATCH_MQ", t -> {
            RemotingCommand c = req(RequestCode.LOCK_BATCH_MQ, newHeader(clientHeader("LockBatchMqRequestHeader")), 23, t);
            c.setBody(lockBody().encode());
            return c;
        }, clientHeader("LockBatchMqRequestHeader"));
        v.commandBoth("request.UNLOCK_BATCH_MQ", t -> {
            RemotingCommand c = req(RequestCode.UNLOCK_BATCH_MQ, newHeader(clientHeader("UnlockBatchMqRequestHeader")), 24, t);
            UnlockBatchRequestBody b = fill(new UnlockBatchRequestBody(), "consumerGroup", "cg", "clientId",
                "127.0.0.1@4242#1234567");
            b.getMqSet().add(new MessageQueue("TopicTest", "broker-a", 1));
            c.setBody(b.encode());
            return c;
        }, clientHeader("UnlockBatchMqRequestHeader"));
        v.commandBoth("request.VIEW_MESSAGE_BY_ID", t -> req(RequestCode.VIEW_MESSAGE_BY_ID,
            fill(new ViewMessageRequestHeader(), "offset", 4294967296123L), 25, t), ViewMessageRequestHeader.class);
        v.commandBoth("request.QUERY_MESSAGE", t -> {
            RemotingCommand c = req(RequestCode.QUERY_MESSAGE, fill(new QueryMessageRequestHeader(),
                "topic", "TopicTest", "key", "\u8ba2\u5355-42 \u043a\u043b\u044e\u0447", "maxNum", 32,
                "beginTimestamp", 0L, "endTimestamp", Long.MAX_VALUE), 26, t);
            c.addExtField("_UNIQUE_KEY_QUERY", "false");
            return c;
        }, QueryMessageRequestHeader.class);
        v.commandBoth("request.DELETE_TOPIC_IN_BROKER", t -> req(RequestCode.DELETE_TOPIC_IN_BROKER,
            fill(new DeleteTopicRequestHeader(), "topic", "OldTopic"), 27, t), DeleteTopicRequestHeader.class);
        v.commandBoth("request.REGISTER_BROKER", t -> {
            RegisterBrokerBody body = new RegisterBrokerBody();
            fill(body, "topicConfigSerializeWrapper", line.registerWrapper(topicConfigWrapper()));
            body.setFilterServerList(new ArrayList<>());
            byte[] bytes = body.encode(false);
            RemotingCommand c = req(RequestCode.REGISTER_BROKER, fill(new RegisterBrokerRequestHeader(),
                "brokerName", "broker-a", "brokerAddr", "127.0.0.1:10911", "clusterName", "DefaultCluster",
                "haServerAddr", "127.0.0.1:10912", "brokerId", 0L, "compressed", false,
                "bodyCrc32", org.apache.rocketmq.common.UtilAll.crc32(bytes)), 28, t);
            c.setBody(bytes);
            return c;
        }, RegisterBrokerRequestHeader.class);
        v.commandBoth("request.GET_KV_CONFIG", t -> req(RequestCode.GET_KV_CONFIG,
            fill(new GetKVConfigRequestHeader(), "namespace", "ORDER_TOPIC_CONFIG", "key", "TopicTest"), 29, t),
            GetKVConfigRequestHeader.class);
        v.commandBoth("request.CHECK_TRANSACTION_STATE.oneway", t -> {
            RemotingCommand c = req(RequestCode.CHECK_TRANSACTION_STATE, fill(new CheckTransactionStateRequestHeader(),
                "tranStateTableOffset", 5L, "commitLogOffset", 987654L, "msgId", "AC110001000118B4AAC20A2B3C0000",
                "transactionId", "AC110001000118B4AAC20A2B3C0000", "offsetMsgId", "7F00000100002A9F00000000000F1206",
                "bname", "broker-a"), 30, t);
            c.setBody(MessageDecoder.encode(Messages.half(), false));
            c.markOnewayRPC();
            return c;
        }, CheckTransactionStateRequestHeader.class);
        v.commandBoth("request.NOTIFY_CONSUMER_IDS_CHANGED.oneway", t -> {
            RemotingCommand c = req(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                fill(new NotifyConsumerIdsChangedRequestHeader(), "consumerGroup", "cg"), 31, t);
            c.markOnewayRPC();
            return c;
        }, NotifyConsumerIdsChangedRequestHeader.class);
        // Next in line after the 25 (protocol sheet §12), and their responses.
        v.commandBoth("request.SEARCH_OFFSET_BY_TIMESTAMP", t -> req(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            fill(new SearchOffsetRequestHeader(), "topic", "TopicTest", "queueId", 2, "timestamp", BORN,
                "bname", "broker-a"), 34, t), SearchOffsetRequestHeader.class);
        v.commandBoth("request.GET_MIN_OFFSET", t -> req(RequestCode.GET_MIN_OFFSET,
            fill(new GetMinOffsetRequestHeader(), "topic", "TopicTest", "queueId", 1), 35, t),
            GetMinOffsetRequestHeader.class);
        v.commandBoth("request.GET_EARLIEST_MSG_STORETIME", t -> req(RequestCode.GET_EARLIEST_MSG_STORETIME,
            fill(new GetEarliestMsgStoretimeRequestHeader(), "topic", "TopicTest", "queueId", 0), 36, t),
            GetEarliestMsgStoretimeRequestHeader.class);
        v.commandBoth("request.DELETE_TOPIC_IN_NAMESRV", t -> req(RequestCode.DELETE_TOPIC_IN_NAMESRV,
            fill(new DeleteTopicFromNamesrvRequestHeader(), "topic", "OldTopic", "clusterName", "DefaultCluster"),
            37, t), DeleteTopicFromNamesrvRequestHeader.class);
        v.commandBoth("request.GET_PRODUCER_CONNECTION_LIST", t -> req(RequestCode.GET_PRODUCER_CONNECTION_LIST,
            fill(new GetProducerConnectionListRequestHeader(), "producerGroup", "pg"), 38, t),
            GetProducerConnectionListRequestHeader.class);
        v.commandBoth("request.PUT_KV_CONFIG", t -> req(RequestCode.PUT_KV_CONFIG,
            fill(new PutKVConfigRequestHeader(), "namespace", "ORDER_TOPIC_CONFIG", "key", "TopicTest",
                "value", "broker-a:4;broker-b:4"), 39, t), PutKVConfigRequestHeader.class);
        v.commandBoth("request.INVOKE_BROKER_TO_RESET_OFFSET", t -> req(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
            fill(new ResetOffsetRequestHeader(), "topic", "TopicTest", "group", "cg", "timestamp", BORN,
                "isForce", true), 40, t), ResetOffsetRequestHeader.class);
        v.commandBoth("request.GET_CONSUMER_RUNNING_INFO", t -> req(RequestCode.GET_CONSUMER_RUNNING_INFO,
            fill(new GetConsumerRunningInfoRequestHeader(), "consumerGroup", "cg", "clientId",
                "127.0.0.1@4242#1234567", "jstackEnable", false), 41, t), GetConsumerRunningInfoRequestHeader.class);
        v.commandBoth("request.GET_BROKER_CONFIG", t -> req(RequestCode.GET_BROKER_CONFIG, null, 42, t), null);
        v.commandBoth("request.UPDATE_BROKER_CONFIG", t -> {
            RemotingCommand c = req(RequestCode.UPDATE_BROKER_CONFIG, null, 43, t);
            c.setBody(utf8("brokerName=broker-a\nflushDiskType=ASYNC_FLUSH\n"));
            return c;
        }, null);
        // Edge cases: empty ext value, non-ASCII remark and ext values, negative/huge opaque, other languages.
        v.commandBoth("request.edge.empty_ext_value", t -> req(RequestCode.PULL_MESSAGE, fill(new PullMessageRequestHeader(),
            "consumerGroup", "cg", "topic", "TopicTest", "queueId", 0, "queueOffset", 0L, "maxMsgNums", 1,
            "sysFlag", 6, "commitOffset", 0L, "suspendTimeoutMillis", 0L, "subscription", "", "subVersion", 0L),
            Integer.MAX_VALUE, t), PullMessageRequestHeader.class);
        v.commandBoth("request.edge.non_ascii_remark_negative_opaque", t -> {
            RemotingCommand c = req(RequestCode.PUT_KV_CONFIG, null, -7, t);
            c.setRemark("\u5907\u6ce8 \u00fc \ud83d\ude80 \"quoted\" \\ back\tslash");
            c.addExtField("namespace", "\u547d\u540d\u7a7a\u95f4");
            c.addExtField("key", "k\u0001\u0002");
            c.addExtField("value", "{\"json\":[1,2]}");
            c.setLanguage(org.apache.rocketmq.remoting.protocol.LanguageCode.GO);
            return c;
        }, null);
        v.commandBoth("request.edge.empty_ext_fields_and_body", t -> {
            RemotingCommand c = req(RequestCode.GET_ALL_TOPIC_CONFIG, null, 0, t);
            c.setExtFields(new HashMap<>());
            c.setBody(new byte[0]);
            c.setLanguage(org.apache.rocketmq.remoting.protocol.LanguageCode.CPP);
            return c;
        }, null);
        // An RPC hook (e.g. ACL's) calls makeCustomHeaderToNet before the encoder: a FastCodesHeader then
        // writes its fields in ROCKETMQ form and the same keys again from extFields.
        v.commandBoth("request.edge.fastcodes_duplicate_keys", t -> {
            RemotingCommand c = req(RequestCode.SEND_MESSAGE_V2,
                SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(sendHeader("TopicTest", false)), 45, t);
            c.makeCustomHeaderToNet();
            c.addExtField("AccessKey", "rocketmq2");
            c.setBody(utf8("acl"));
            return c;
        }, SendMessageRequestHeaderV2.class);
        // 5.x POP codes do not fit the ROCKETMQ header's int16 code: Java's (short) cast truncates them.
        v.commandBoth("request.edge.code_over_short", t -> {
            RemotingCommand c = req(200050, null, 32, t);
            c.addExtField("consumerGroup", "cg");
            return c;
        }, null);
        line.lineOnlyCommands(v);
    }

    void responses(Vectors v) throws Exception {
        v.commandBoth("response.SEND_MESSAGE", t -> {
            RemotingCommand c = resp(ResponseCode.SUCCESS, null, fill(new SendMessageResponseHeader(),
                "msgId", "7F00000100002A9F00000000000F1206", "queueId", 1, "queueOffset", 77L), 3, t);
            c.addExtField("MSG_REGION", "DefaultRegion");
            c.addExtField("TRACE_ON", "true");
            return c;
        }, SendMessageResponseHeader.class);
        v.commandBoth("response.PULL_MESSAGE.found", t -> {
            RemotingCommand c = resp(ResponseCode.SUCCESS, "FOUND", fill(new PullMessageResponseHeader(),
                "suggestWhichBrokerId", 0L, "nextBeginOffset", 131L, "minOffset", 0L, "maxOffset", 131L), 6, t);
            List<byte[]> recs = new ArrayList<>();
            int total = 0;
            for (MessageExt m : Messages.stored()) {
                byte[] r = MessageDecoder.encode(m, false);
                recs.add(r);
                total += r.length;
            }
            byte[] body = new byte[total];
            int pos = 0;
            for (byte[] r : recs) {
                System.arraycopy(r, 0, body, pos, r.length);
                pos += r.length;
            }
            c.setBody(body);
            return c;
        }, PullMessageResponseHeader.class);
        v.commandBoth("response.PULL_MESSAGE.offset_moved", t -> resp(ResponseCode.PULL_OFFSET_MOVED,
            "OFFSET_OVERFLOW_BADLY", fill(new PullMessageResponseHeader(), "suggestWhichBrokerId", 0L,
                "nextBeginOffset", 10L, "minOffset", 0L, "maxOffset", 10L), 6, t), PullMessageResponseHeader.class);
        v.commandBoth("response.QUERY_CONSUMER_OFFSET", t -> resp(ResponseCode.SUCCESS, null,
            fill(new QueryConsumerOffsetResponseHeader(), "offset", 42L), 8, t), QueryConsumerOffsetResponseHeader.class);
        v.commandBoth("response.QUERY_CONSUMER_OFFSET.not_found", t -> resp(ResponseCode.QUERY_NOT_FOUND,
            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first", null, 8, t), null);
        v.commandBoth("response.GET_MAX_OFFSET", t -> resp(ResponseCode.SUCCESS, null,
            fill(new GetMaxOffsetResponseHeader(), "offset", 1L << 40), 10, t), GetMaxOffsetResponseHeader.class);
        v.commandBoth("response.GET_KV_CONFIG", t -> resp(ResponseCode.SUCCESS, null,
            fill(new GetKVConfigResponseHeader(), "value", "broker-a:4;broker-b:4"), 29, t), GetKVConfigResponseHeader.class);
        v.commandBoth("response.REGISTER_BROKER", t -> resp(ResponseCode.SUCCESS, null,
            new RegisterBrokerResponseHeader(), 28, t), RegisterBrokerResponseHeader.class);
        v.commandBoth("response.GET_ROUTEINFO_BY_TOPIC", t -> {
            RemotingCommand c = resp(ResponseCode.SUCCESS, null, null, 1, t);
            c.setBody(line.routeStandard(routeData()));
            return c;
        }, null);
        v.commandBoth("response.HEART_BEAT", t -> resp(ResponseCode.SUCCESS, null, null, 5, t), null);
        v.commandBoth("response.GET_MIN_OFFSET", t -> resp(ResponseCode.SUCCESS, null,
            fill(new GetMinOffsetResponseHeader(), "offset", 0L), 35, t), GetMinOffsetResponseHeader.class);
        v.commandBoth("response.GET_EARLIEST_MSG_STORETIME", t -> resp(ResponseCode.SUCCESS, null,
            fill(new GetEarliestMsgStoretimeResponseHeader(), "timestamp", -1L), 36, t),
            GetEarliestMsgStoretimeResponseHeader.class);
        v.commandBoth("response.SEARCH_OFFSET_BY_TIMESTAMP", t -> resp(ResponseCode.SUCCESS, null,
            fill(new SearchOffsetResponseHeader(), "offset", 77L), 34, t), SearchOffsetResponseHeader.class);
        v.commandBoth("response.QUERY_MESSAGE", t -> {
            RemotingCommand c = resp(ResponseCode.SUCCESS, null, fill(new QueryMessageResponseHeader(),
                "indexLastUpdateTimestamp", BORN + 9, "indexLastUpdatePhyoffset", 987654L), 26, t);
            c.setBody(MessageDecoder.encode(Messages.stored().get(1), false));
            return c;
        }, QueryMessageResponseHeader.class);
        v.commandBoth("response.VIEW_MESSAGE_BY_ID", t -> {
            RemotingCommand c = resp(ResponseCode.SUCCESS, null, null, 25, t);
            c.setBody(MessageDecoder.encode(Messages.stored().get(0), false));
            return c;
        }, null);
        v.commandBoth("response.GET_BROKER_CONFIG", t -> {
            RemotingCommand c = resp(ResponseCode.SUCCESS, null, fill(new GetBrokerConfigResponseHeader(),
                "version", dataVersion().toJson()), 42, t);
            c.setBody(utf8("brokerName=broker-a\nbrokerClusterName=DefaultCluster\n"));
            return c;
        }, GetBrokerConfigResponseHeader.class);
        v.commandBoth("response.GET_CONSUMER_LIST_BY_GROUP", t -> {
            RemotingCommand c = resp(ResponseCode.SUCCESS, null, null, 9, t);
            GetConsumerListByGroupResponseBody ids = new GetConsumerListByGroupResponseBody();
            ids.setConsumerIdList(new ArrayList<>(List.of("127.0.0.1@4242#1234567")));
            c.setBody(ids.encode());
            return c;
        }, null);
        v.commandBoth("response.error.system_error", t -> resp(ResponseCode.SYSTEM_ERROR,
            "org.apache.rocketmq.acl.common.AclException: No accessKey is configured, \u9519\u8bef", null, 44, t), null);
        v.commandBoth("response.error.not_supported", t -> resp(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            " request type 999 not supported", null, 45, t), null);
        v.commandBoth("response.error.topic_not_exist", t -> resp(ResponseCode.TOPIC_NOT_EXIST,
            "No topic route info in name server for the topic: Nope\nSee http://rocketmq.apache.org/docs/faq/ for further details.",
            null, 1, t), null);
    }

    static HeartbeatData heartbeat() {
        HeartbeatData hb = new HeartbeatData();
        hb.setClientID("127.0.0.1@4242#1234567");
        hb.getProducerDataSet().add(fill(new ProducerData(), "groupName", "CLIENT_INNER_PRODUCER"));
        hb.getProducerDataSet().add(fill(new ProducerData(), "groupName", "pg"));
        ConsumerData cd = fill(new ConsumerData(), "groupName", "cg", "consumeType", ConsumeType.CONSUME_PASSIVELY,
            "messageModel", MessageModel.CLUSTERING, "consumeFromWhere", ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
            "unitMode", false);
        SubscriptionData sd = new SubscriptionData("TopicTest", "TagA || TagB");
        sd.getTagsSet().addAll(Arrays.asList("TagA", "TagB"));
        sd.getCodeSet().addAll(Arrays.asList("TagA".hashCode(), "TagB".hashCode()));
        sd.setSubVersion(1700000000000L);
        cd.getSubscriptionDataSet().add(sd);
        SubscriptionData retry = new SubscriptionData("%RETRY%cg", "*");
        retry.setSubVersion(1700000000001L);
        cd.getSubscriptionDataSet().add(retry);
        hb.getConsumerDataSet().add(cd);
        return hb;
    }

    static LockBatchRequestBody lockBody() {
        LockBatchRequestBody b = fill(new LockBatchRequestBody(), "consumerGroup", "cg", "clientId",
            "127.0.0.1@4242#1234567");
        b.getMqSet().add(new MessageQueue("TopicTest", "broker-a", 0));
        b.getMqSet().add(new MessageQueue("TopicTest", "broker-a", 1));
        return b;
    }

    static TopicRouteData routeData() {
        TopicRouteData r = new TopicRouteData();
        List<QueueData> qds = new ArrayList<>();
        qds.add(fill(new QueueData(), "brokerName", "broker-a", "readQueueNums", 4, "writeQueueNums", 4,
            "perm", 6, "topicSysFlag", 0));
        qds.add(fill(new QueueData(), "brokerName", "broker-b", "readQueueNums", 8, "writeQueueNums", 2,
            "perm", 4, "topicSysFlag", 1));
        r.setQueueDatas(qds);
        HashMap<Long, String> a = new HashMap<>();
        a.put(0L, "10.0.0.5:10911");
        a.put(1L, "10.0.0.6:10911");
        HashMap<Long, String> b = new HashMap<>();
        b.put(0L, "[::1]:10911");
        List<BrokerData> bds = new ArrayList<>();
        bds.add(new BrokerData("DefaultCluster", "broker-a", a));
        bds.add(new BrokerData("Cluster-\u00e9", "broker-b", b));
        r.setBrokerDatas(bds);
        HashMap<String, List<String>> fst = new HashMap<>();
        fst.put("10.0.0.5:10911", Arrays.asList("10.0.0.5:10999"));
        r.setFilterServerTable(fst);
        r.setOrderTopicConf("broker-a:4;broker-b:8");
        return r;
    }

    static DataVersion dataVersion() {
        DataVersion dv = new DataVersion();
        fill(dv, "timestamp", 1700000000999L, "counter", new AtomicLong(7));
        return dv;
    }

    static TopicConfigSerializeWrapper topicConfigWrapper() {
        TopicConfigSerializeWrapper w = new TopicConfigSerializeWrapper();
        ConcurrentMap<String, TopicConfig> table = new ConcurrentHashMap<>();
        table.put("TopicTest", new TopicConfig("TopicTest", 4, 4, 6));
        TopicConfig tbw = new TopicConfig("TBW102", 8, 8, 7);
        tbw.setOrder(true);
        tbw.setTopicSysFlag(1);
        table.put("TBW102", tbw);
        w.setTopicConfigTable(table);
        w.setDataVersion(dataVersion());
        return w;
    }

    void bodies(Vectors v) throws Exception {
        TopicRouteData route = routeData();
        v.body("body.TopicRouteData.standard", route, line.routeStandard(route), "standard");
        v.body("body.TopicRouteData.legacy", route, route.encode(), "legacy");
        TopicRouteData single = new TopicRouteData();
        HashMap<Long, String> addrs = new HashMap<>();
        addrs.put(0L, "127.0.0.1:10911");
        single.setBrokerDatas(new ArrayList<>(List.of(new BrokerData("DefaultCluster", "broker-a", addrs))));
        single.setQueueDatas(new ArrayList<>(List.of(fill(new QueueData(), "brokerName", "broker-a",
            "readQueueNums", 4, "writeQueueNums", 4, "perm", 6, "topicSysFlag", 0))));
        single.setFilterServerTable(new HashMap<>());
        v.body("body.TopicRouteData.standard_single", single, line.routeStandard(single), "standard");
        v.body("body.TopicRouteData.legacy_single", single, single.encode(), "legacy");

        ClusterInfo ci = new ClusterInfo();
        HashMap<String, BrokerData> bat = new HashMap<>();
        for (BrokerData bd : route.getBrokerDatas()) {
            bat.put(bd.getBrokerName(), bd);
        }
        ci.setBrokerAddrTable(bat);
        HashMap<String, java.util.Set<String>> cat = new HashMap<>();
        cat.put("DefaultCluster", new HashSet<>(List.of("broker-a")));
        cat.put("Cluster-\u00e9", new HashSet<>(List.of("broker-b")));
        ci.setClusterAddrTable(cat);
        v.body("body.ClusterInfo", ci, ci.encode(), "legacy");

        TopicStatsTable tst = new TopicStatsTable();
        HashMap<MessageQueue, TopicOffset> ot = new HashMap<>();
        for (int q = 0; q < 3; q++) {
            TopicOffset to = new TopicOffset();
            to.setMinOffset(q);
            to.setMaxOffset(100L * q + 5);
            to.setLastUpdateTimestamp(q == 0 ? 0L : BORN + q);
            ot.put(new MessageQueue("TopicTest", "broker-a", q), to);
        }
        tst.setOffsetTable(ot);
        v.body("body.TopicStatsTable", tst, tst.encode(), "legacy");

        ConsumeStats cs = new ConsumeStats();
        HashMap<MessageQueue, OffsetWrapper> cot = new HashMap<>();
        for (int q = 0; q < 2; q++) {
            OffsetWrapper ow = new OffsetWrapper();
            ow.setBrokerOffset(50L + q);
            ow.setConsumerOffset(40L + q);
            ow.setLastTimestamp(BORN + q);
            cot.put(new MessageQueue("TopicTest", "broker-" + (char) ('a' + q), q), ow);
        }
        cs.setOffsetTable(cot);
        cs.setConsumeTps(12.5);
        v.body("body.ConsumeStats", cs, cs.encode(), "legacy");

        ConsumerOffsetSerializeWrapper cow = new ConsumerOffsetSerializeWrapper();
        ConcurrentMap<Integer, Long> offs = new ConcurrentHashMap<>();
        offs.put(0, 12L);
        offs.put(1, 7L);
        offs.put(15, 1L << 33);
        cow.getOffsetTable().put("TopicTest@cg", offs);
        ConcurrentMap<Integer, Long> retry = new ConcurrentHashMap<>();
        retry.put(0, 0L);
        cow.getOffsetTable().put("%RETRY%cg@cg", retry);
        v.body("body.ConsumerOffsetSerializeWrapper", cow, cow.encode(), "legacy");

        TopicConfigSerializeWrapper tcw = topicConfigWrapper();
        v.body("body.TopicConfigSerializeWrapper", tcw, tcw.encode(), "legacy");

        HeartbeatData hb = heartbeat();
        v.body("body.HeartbeatData", hb, hb.encode(), "legacy");

        LockBatchRequestBody lock = lockBody();
        v.body("body.LockBatchRequestBody", lock, lock.encode(), "legacy");

        KVTable kv = new KVTable();
        HashMap<String, String> table = new HashMap<>();
        table.put("brokerVersionDesc", MQVersion.getVersionDesc(VERSION));
        table.put("putTps", "0.0 0.0 0.0");
        table.put("note", "\u4e2d\u6587 \u00fc");
        kv.setTable(table);
        v.body("body.KVTable", kv, kv.encode(), "legacy");

        TopicList tl = new TopicList();
        tl.getTopicList().addAll(List.of("TopicTest", "TBW102", "%RETRY%cg"));
        v.body("body.TopicList", tl, tl.encode(), "legacy");

        RegisterBrokerBody rbb = new RegisterBrokerBody();
        fill(rbb, "topicConfigSerializeWrapper", line.registerWrapper(topicConfigWrapper()));
        rbb.setFilterServerList(new ArrayList<>(List.of("10.0.0.5:10999")));
        v.body("body.RegisterBrokerBody", rbb, rbb.encode(false), "legacy");
        v.body("body.RegisterBrokerBody.compressed", rbb, rbb.encode(true), "compressed");

        adminBodies(v);

        SubscriptionGroupConfig sgc = fill(new SubscriptionGroupConfig(), "groupName", "cg");
        v.body("body.SubscriptionGroupConfig", sgc, RemotingSerializable.encode(sgc), "legacy");
    }

    /** Bodies the broker answers client and mqadmin requests with (and the client's answers to the broker). */
    static void adminBodies(Vectors v) throws Exception {
        MessageQueue q0 = new MessageQueue("TopicTest", "broker-a", 0);
        MessageQueue q1 = new MessageQueue("TopicTest", "broker-a", 1);
        Connection conn = fill(new Connection(), "clientId", "127.0.0.1@4242#1234567", "clientAddr",
            "127.0.0.1:53412", "language", org.apache.rocketmq.remoting.protocol.LanguageCode.JAVA, "version", VERSION);
        ConsumerConnection cc = new ConsumerConnection();
        cc.getConnectionSet().add(conn);
        SubscriptionData sd = new SubscriptionData("TopicTest", "*");
        sd.setSubVersion(1700000000000L);
        cc.getSubscriptionTable().put("TopicTest", sd);
        fill(cc, "consumeType", ConsumeType.CONSUME_PASSIVELY, "messageModel", MessageModel.CLUSTERING,
            "consumeFromWhere", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        v.body("body.ConsumerConnection", cc, cc.encode(), "legacy");
        ProducerConnection pc = new ProducerConnection();
        pc.getConnectionSet().add(conn);
        v.body("body.ProducerConnection", pc, pc.encode(), "legacy");
        GetConsumerListByGroupResponseBody ids = new GetConsumerListByGroupResponseBody();
        ids.setConsumerIdList(new ArrayList<>(List.of("127.0.0.1@4242#1234567", "127.0.0.2@77#99")));
        v.body("body.GetConsumerListByGroupResponseBody", ids, ids.encode(), "legacy");
        LockBatchResponseBody locked = new LockBatchResponseBody();
        locked.getLockOKMQSet().add(q0);
        v.body("body.LockBatchResponseBody", locked, locked.encode(), "legacy");
        ResetOffsetBody reset = new ResetOffsetBody();
        HashMap<MessageQueue, Long> resetTable = new HashMap<>();
        resetTable.put(q0, 10L);
        resetTable.put(q1, -1L);
        reset.setOffsetTable(resetTable);
        v.body("body.ResetOffsetBody", reset, reset.encode(), "legacy");
        GroupList groups = new GroupList();
        groups.getGroupList().addAll(List.of("cg", "cg2"));
        v.body("body.GroupList", groups, groups.encode(), "legacy");
        SubscriptionGroupWrapper sgw = new SubscriptionGroupWrapper();
        sgw.getSubscriptionGroupTable().put("cg", fill(new SubscriptionGroupConfig(), "groupName", "cg",
            "retryMaxTimes", 3, "consumeBroadcastEnable", false));
        sgw.setDataVersion(dataVersion());
        v.body("body.SubscriptionGroupWrapper", sgw, sgw.encode(), "legacy");
        ConsumerRunningInfo cri = new ConsumerRunningInfo();
        cri.getProperties().put("PROP_CONSUME_TYPE", "CONSUME_PASSIVELY");
        cri.getProperties().put("PROP_CONSUMER_START_TIMESTAMP", "1700000000000");
        cri.getProperties().put("consumeThreadMax", "20");
        cri.getSubscriptionSet().add(sd);
        ProcessQueueInfo pqi = fill(new ProcessQueueInfo(), "commitOffset", 42L, "cachedMsgMinOffset", 40L,
            "cachedMsgMaxOffset", 45L, "cachedMsgCount", 6, "cachedMsgSizeInMiB", 1, "locked", true,
            "lastLockTimestamp", BORN, "lastPullTimestamp", BORN + 1, "lastConsumeTimestamp", BORN + 2);
        cri.getMqTable().put(q0, pqi);
        cri.getMqTable().put(q1, new ProcessQueueInfo());
        ConsumeStatus status = fill(new ConsumeStatus(), "pullRT", 12.5, "pullTPS", 1.0E-4, "consumeRT", 1.0E7,
            "consumeOKTPS", 0.1, "consumeFailedTPS", 123456.789, "consumeFailedMsgs", 3L);
        cri.getStatusTable().put("TopicTest", status);
        v.body("body.ConsumerRunningInfo", cri, cri.encode(), "legacy");
        CheckClientRequestBody check = fill(new CheckClientRequestBody(), "clientId", "127.0.0.1@4242#1234567",
            "group", "cg", "subscriptionData", fill(new SubscriptionData("TopicTest", "a > 5 AND b = 'x'"),
                "expressionType", "SQL92", "subVersion", 1700000000000L));
        v.body("body.CheckClientRequestBody", check, check.encode(), "legacy");
        ConsumeMessageDirectlyResult direct = fill(new ConsumeMessageDirectlyResult(), "order", true,
            "autoCommit", false, "consumeResult", CMResult.CR_THROW_EXCEPTION, "remark",
            "java.lang.RuntimeException: \u00e9chec", "spentTimeMills", 42L);
        v.body("body.ConsumeMessageDirectlyResult", direct, direct.encode(), "legacy");
        GetConsumerStatusBody status2 = new GetConsumerStatusBody();
        status2.getMessageQueueTable().put(q0, 12L);
        HashMap<MessageQueue, Long> perClient = new HashMap<>();
        perClient.put(q1, 7L);
        status2.getConsumerTable().put("127.0.0.1@4242#1234567", perClient);
        v.body("body.GetConsumerStatusBody", status2, status2.encode(), "legacy");
        UnlockBatchRequestBody unlock = fill(new UnlockBatchRequestBody(), "consumerGroup", "cg", "clientId",
            "127.0.0.1@4242#1234567");
        unlock.getMqSet().add(q1);
        v.body("body.UnlockBatchRequestBody", unlock, unlock.encode(), "legacy");
        QueryConsumeTimeSpanBody span = new QueryConsumeTimeSpanBody();
        QueueTimeSpan qts = fill(new QueueTimeSpan(), "messageQueue", q0, "minTimeStamp", BORN, "maxTimeStamp",
            BORN + 1000, "consumeTimeStamp", BORN + 500, "delayTime", 500L);
        span.setConsumeTimeSpanSet(new ArrayList<>(List.of(qts)));
        v.body("body.QueryConsumeTimeSpanBody", span, span.encode(), "legacy");
        HashMap<String, List<ProducerInfo>> producers = new HashMap<>();
        producers.put("pg", new ArrayList<>(List.of(new ProducerInfo("127.0.0.1@4242#1234567", "/127.0.0.1:53412",
            org.apache.rocketmq.remoting.protocol.LanguageCode.JAVA, VERSION, BORN))));
        producers.put("CLIENT_INNER_PRODUCER", new ArrayList<>());
        ProducerTableInfo producerTable = new ProducerTableInfo(producers);
        v.body("body.ProducerTableInfo", producerTable, producerTable.encode(), "legacy");
        TopicConfig topic = new TopicConfig("TopicTest", 4, 8, 6);
        topic.setOrder(true);
        v.body("body.TopicConfig", topic, RemotingSerializable.encode(topic), "legacy");
        DelayOffsetSerializeWrapper delay = new DelayOffsetSerializeWrapper();
        ConcurrentMap<Integer, Long> levels = new ConcurrentHashMap<>();
        levels.put(1, 12L);
        levels.put(3, 0L);
        levels.put(18, 1L << 33);
        delay.setOffsetTable(levels);
        v.body("body.DelayOffsetSerializeWrapper", delay, delay.encode(), "legacy");
    }
}
