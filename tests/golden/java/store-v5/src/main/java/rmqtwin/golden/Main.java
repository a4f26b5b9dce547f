package rmqtwin.golden;

import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HexFormat;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.message.MessageVersion;
import org.apache.rocketmq.store.MessageExtEncoder;
import org.apache.rocketmq.store.PutMessageContext;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * The 5.5.0 broker's own record encoder (rocketmq-store MessageExtEncoder). {@code encoder WORKDIR}
 * prints rows: {@code batch<TAB>hex} for WORKDIR/batch.bin put as a batch (IPv4, then IPv6 store host),
 * {@code reserved} / {@code filled} for a record with the appended property CRC before and after
 * DefaultAppendMessageCallback fills it, and {@code v2} for a v2 record (200-char topic, IPv6 hosts).
 */
public final class Main {
    private static final HexFormat HEX = StoreOracle.HEX;

    private Main() {
    }

    static byte[] bytes(ByteBuffer buffer, int length) {
        byte[] out = new byte[length];
        buffer.get(out);
        return out;
    }

    public static void main(String[] args) throws Exception {
        Path dir = StoreOracle.workDir(args);
        PrintStream rows = StoreOracle.rows();
        MessageExtEncoder encoder = new MessageExtEncoder(new MessageStoreConfig());
        for (String storeIp : new String[] {"10.0.0.5", "::1"}) {
            ByteBuffer encoded = encoder.encode(StoreOracle.batch(dir, storeIp), new PutMessageContext("BatchTopic-2"));
            rows.println("batch\t" + HEX.formatHex(bytes(encoded, encoded.remaining())));
        }

        MessageStoreConfig crcConfig = new MessageStoreConfig();
        crcConfig.setEnabledAppendPropCRC(true);
        MessageExtEncoder crcEncoder = new MessageExtEncoder(crcConfig);
        MessageExtBrokerInner inner = new MessageExtBrokerInner();
        inner.setTopic("TopicTest");
        inner.setQueueId(3);
        inner.setFlag(7);
        inner.setBody("Hello RocketMQ".getBytes(StandardCharsets.UTF_8));
        inner.setBodyCRC(UtilAll.crc32(inner.getBody()));
        inner.setBornTimestamp(1763790000123L);
        inner.setStoreTimestamp(1763790000456L);
        inner.setBornHost(new InetSocketAddress(InetAddress.getByName("192.168.0.7"), 50123));
        inner.setStoreHost(new InetSocketAddress(InetAddress.getByName("10.0.0.5"), 10911));
        inner.setReconsumeTimes(1);
        inner.setQueueOffset(42L);
        inner.setPropertiesString("TAGS\u0001TagA\u0002KEYS\u0001k1 k2");
        if (crcEncoder.encode(inner) != null) {
            throw new IllegalStateException("encode failed");
        }
        ByteBuffer buffer = crcEncoder.getEncoderBuffer();
        int msgLen = buffer.getInt(0);
        byte[] reserved = bytes(buffer.duplicate(), msgLen);
        rows.println("reserved\t" + HEX.formatHex(reserved));
        // Then DefaultAppendMessageCallback.doAppend: CRC of all but the tail, written by createCrc32.
        ByteBuffer record = ByteBuffer.wrap(reserved);
        record.putLong(28, 4096L);
        ByteBuffer head = record.duplicate();
        head.limit(msgLen - 20);
        int crc = UtilAll.crc32(head);
        ByteBuffer tail = record.duplicate();
        tail.position(msgLen - 20);
        MessageDecoder.createCrc32(tail, crc);
        rows.println("filled\t" + HEX.formatHex(reserved));

        // A 200-char topic: the v2 record, here with IPv6 hosts.
        MessageExtBrokerInner v2 = new MessageExtBrokerInner();
        v2.setTopic("V2".repeat(100));
        v2.setVersion(MessageVersion.MESSAGE_VERSION_V2);
        v2.setQueueId(1);
        v2.setBody(new byte[] {1, 2, 3});
        v2.setBodyCRC(UtilAll.crc32(v2.getBody()));
        v2.setBornTimestamp(5L);
        v2.setStoreTimestamp(6L);
        v2.setBornHost(new InetSocketAddress(InetAddress.getByName("2001:db8::1"), 1));
        v2.setStoreHost(new InetSocketAddress(InetAddress.getByName("::1"), 10911));
        v2.setBornHostV6Flag();
        v2.setStoreHostAddressV6Flag();
        v2.setPropertiesString("UNIQ_KEY\u0001U\u0002");
        if (encoder.encode(v2) != null) {
            throw new IllegalStateException("encode failed");
        }
        ByteBuffer v2Buffer = encoder.getEncoderBuffer();
        rows.println("v2\t" + HEX.formatHex(bytes(v2Buffer.duplicate(), v2Buffer.getInt(0))));
        rows.flush();
    }
}
