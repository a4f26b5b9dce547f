package rmqtwin.golden;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.compression.CompressorFactory;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;

/**
 * Stored records and batch bodies: the message classes (MessageExt, MessageDecoder, MessageSysFlag,
 * the compressors) live in the same packages in 4.9.x and 5.x, so both lines build the same messages.
 */
final class Messages {
    static final long BORN = 1700000000123L;

    private Messages() {
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static MessageExt ext(String topic, byte[] body, int sysFlag, InetSocketAddress born, InetSocketAddress store,
        long queueOffset, long commitLogOffset) {
        MessageExt m = new MessageExt();
        m.setTopic(topic);
        m.setBody(body);
        m.setFlag(0);
        m.setQueueId(1);
        m.setSysFlag(sysFlag);
        m.setBornTimestamp(BORN);
        m.setBornHost(born);
        m.setStoreTimestamp(BORN + 5);
        m.setStoreHost(store);
        m.setQueueOffset(queueOffset);
        m.setCommitLogOffset(commitLogOffset);
        m.setBodyCRC(UtilAll.crc32(body));
        m.setReconsumeTimes(0);
        m.setPreparedTransactionOffset(0);
        MessageAccessor.putProperty(m, "KEYS", "order-1 order-2");
        m.setTags("TagA");
        MessageAccessor.putProperty(m, "UNIQ_KEY", "AC110001000118B4AAC20A2B3C0000");
        MessageAccessor.putProperty(m, "CLUSTER", "DefaultCluster");
        return m;
    }

    static InetSocketAddress addr(String ip, int port) throws Exception {
        return new InetSocketAddress(InetAddress.getByName(ip), port);
    }

    static List<MessageExt> stored() throws Exception {
        List<MessageExt> list = new ArrayList<>();
        list.add(ext("TopicTest", utf8("Hello RocketMQ 0"), 0, addr("192.168.1.20", 53412),
            addr("127.0.0.1", 10911), 128, 987654));
        MessageExt second = ext("TopicTest", utf8("\u4f60\u597d \u00fc \ud83d\ude80"), 0,
            addr("192.168.1.20", 53412), addr("127.0.0.1", 10911), 129, 987654 + 200);
        second.setFlag(0x7fffffff);
        second.setReconsumeTimes(3);
        MessageAccessor.putProperty(second, "RETRY_TOPIC", "TopicTest");
        MessageAccessor.putProperty(second, "note", "caf\u00e9");
        list.add(second);
        MessageExt third = ext("TopicTest", new byte[0], 0, addr("10.1.2.3", 1), addr("127.0.0.1", 10911),
            130, 987654 + 400);
        list.add(third);
        return list;
    }

    static MessageExt half() throws Exception {
        MessageExt m = ext("TopicTest", utf8("half"), MessageSysFlag.TRANSACTION_PREPARED_TYPE,
            addr("192.168.1.20", 53412), addr("127.0.0.1", 10911), 5, 987654);
        MessageAccessor.putProperty(m, "TRAN_MSG", "true");
        MessageAccessor.putProperty(m, "PGROUP", "tx_group");
        MessageAccessor.putProperty(m, "REAL_TOPIC", "TopicTest");
        MessageAccessor.putProperty(m, "REAL_QID", "1");
        return m;
    }

    static void vectors(Vectors v) throws Exception {
        v.records("record.single_ipv4", List.of(stored().get(0)));
        v.records("record.pull_body_three", stored());
        v.records("record.ipv6_born_and_store", List.of(ext("TopicTest", utf8("v6"),
            MessageSysFlag.BORNHOST_V6_FLAG | MessageSysFlag.STOREHOSTADDRESS_V6_FLAG,
            addr("2001:db8::1", 40000), addr("::1", 10911), 0, 1L << 32)));
        v.records("record.ipv6_born_only", List.of(ext("TopicTest", utf8("v6 born"), MessageSysFlag.BORNHOST_V6_FLAG,
            addr("fe80::1234:5678:9abc:def0", 40001), addr("127.0.0.1", 10911), 1, 4096)));
        v.records("record.transaction_prepared", List.of(half()));
        MessageExt committed = ext("TopicTest", utf8("committed"), MessageSysFlag.TRANSACTION_COMMIT_TYPE,
            addr("192.168.1.20", 53412), addr("127.0.0.1", 10911), 6, 999999);
        committed.setPreparedTransactionOffset(987654);
        v.records("record.transaction_commit", List.of(committed));
        byte[] big = new byte[6000];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) ("RocketMQ golden vector ".charAt(i % 23));
        }
        for (CompressionType ct : CompressionType.values()) {
            byte[] compressed = CompressorFactory.getCompressor(ct).compress(big, 5);
            int sysFlag = MessageSysFlag.COMPRESSED_FLAG | ct.getCompressionFlag();
            MessageExt m = ext("TopicTest", compressed, sysFlag, addr("192.168.1.20", 53412),
                addr("127.0.0.1", 10911), 7, 1000000);
            v.records("record.compressed_" + ct.name().toLowerCase(), List.of(m));
        }
        MessageExt longTopic = ext("T".repeat(127), utf8("x"), 0, addr("1.2.3.4", 5), addr("5.6.7.8", 9), 0, 0);
        v.records("record.topic_127", List.of(longTopic));
        v.batch("batch.three", batch());
        v.batch("batch.single_empty_props", List.of(new Message("TopicTest", utf8("only body"))));
    }

    static List<Message> batch() {
        List<Message> list = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Message m = new Message("TopicTest", "TagA", "key-" + i, utf8("batch body " + i + " \u00fc"));
            MessageAccessor.putProperty(m, "UNIQ_KEY", "AC110001000118B4AAC20A2B3C000" + i);
            m.setFlag(i);
            list.add(m);
        }
        return list;
    }
}
