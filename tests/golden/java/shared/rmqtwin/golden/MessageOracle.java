package rmqtwin.golden;

import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.compression.CompressorFactory;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The client's message classes (MessageDecoder, CompressorFactory, MessageClientIDSetter, HashMap-backed
 * Message properties; the same packages in 4.9.x and 5.x) on what the codec tests put in a work directory:
 * records.bin (a pull body), plain.bin and py_TYPE.bin (compressed bodies), strings.txt, batch.txt and
 * properties.txt (UTF-8 hex per line). Prints rows {@code kind<TAB>fields...} and writes batch.bin and
 * java_TYPE.bin back into the directory.
 */
final class MessageOracle {
    private MessageOracle() {
    }

    static String str(String hex) {
        return new String(Describe.unhex(hex), StandardCharsets.UTF_8);
    }

    static String host(SocketAddress a) {
        InetSocketAddress s = (InetSocketAddress) a;
        return Describe.hex(s.getAddress().getAddress()) + ":" + s.getPort();
    }

    static String props(Map<String, String> p) {
        StringBuilder sb = new StringBuilder();
        if (p != null) {
            for (Map.Entry<String, String> e : new TreeMap<>(p).entrySet()) {
                sb.append(Describe.hex(e.getKey().getBytes(StandardCharsets.UTF_8))).append('=')
                    .append(Describe.hex(e.getValue().getBytes(StandardCharsets.UTF_8))).append(',');
            }
        }
        return sb.toString();
    }

    static MessageExt javaMessage(String topic, byte[] body, String bornIp, int bornPort, String storeIp,
        String[] kv) throws Exception {
        MessageExt m = new MessageExt();
        m.setTopic(topic);
        m.setFlag(7);
        m.setBody(body);
        m.setQueueId(3);
        m.setQueueOffset(42);
        m.setBornTimestamp(1763790000123L);
        m.setBornHost(new InetSocketAddress(InetAddress.getByName(bornIp), bornPort));
        m.setStoreTimestamp(1763790000456L);
        m.setStoreHost(new InetSocketAddress(InetAddress.getByName(storeIp), 10911));
        if (bornIp.contains(":")) {
            m.setBornHostV6Flag();
        }
        if (storeIp.contains(":")) {
            m.setStoreHostAddressV6Flag();
        }
        m.setCommitLogOffset(0x1234);
        m.setBodyCRC(UtilAll.crc32(body));
        m.setReconsumeTimes(1);
        for (int i = 0; i < kv.length; i += 2) {
            MessageAccessor.putProperty(m, kv[i], kv[i + 1]);
        }
        return m;
    }

    static void run(Path dir, PrintStream rows) throws Exception {
        List<String> out = new ArrayList<>();

        ByteBuffer pullBody = ByteBuffer.wrap(Files.readAllBytes(dir.resolve("records.bin")));
        for (MessageExt m : MessageDecoder.decodes(pullBody)) {
            out.add(String.join("\t", "record", Describe.hex(m.getTopic().getBytes(StandardCharsets.UTF_8)),
                "" + m.getFlag(), "" + m.getQueueId(), "" + m.getStoreSize(), "" + m.getQueueOffset(),
                "" + m.getSysFlag(), "" + m.getBornTimestamp(), host(m.getBornHost()),
                "" + m.getStoreTimestamp(),
                host(m.getStoreHost()), ((MessageClientExt) m).getOffsetMsgId(), "" + m.getCommitLogOffset(),
                "" + m.getBodyCRC(), "" + m.getReconsumeTimes(), "" + m.getPreparedTransactionOffset(),
                Describe.hex(m.getBody() == null ? new byte[0] : m.getBody()), props(m.getProperties())));
        }

        out.add("encoded\t" + Describe.hex(MessageDecoder.encode(javaMessage("TopicTest",
            "Hello RocketMQ".getBytes(StandardCharsets.UTF_8), "192.168.0.7", 50123, "10.0.0.5",
            new String[] {"TAGS", "TagA", "KEYS", "k1 k2", "UNIQ_KEY", "7F000001A1B2C3D4E5F60718293A4B5C",
                "CLUSTER", "DefaultCluster"}), false)));
        out.add("encoded\t" + Describe.hex(MessageDecoder.encode(javaMessage("V6Topic",
            "xxxxxxxxxx".getBytes(StandardCharsets.UTF_8), "2001:db8::1", 1, "::1",
            new String[] {"WAIT", "true"}), false)));

        byte[] plain = Files.readAllBytes(dir.resolve("plain.bin"));
        for (String name : new String[] {"LZ4", "ZSTD", "ZLIB", "LZ4_LINKED"}) {
            CompressionType type = CompressionType.of(name.replace("_LINKED", ""));
            try {
                byte[] back = CompressorFactory.getCompressor(type).decompress(
                    Files.readAllBytes(dir.resolve("py_" + name + ".bin")));
                out.add("decompress\t" + name + "\t" + (Arrays.equals(back, plain) ? "SAME" : "DIFFERENT"));
            } catch (Exception e) {
                out.add("decompress\t" + name + "\tERROR " + Golden.field(e));
            }
            if (!name.endsWith("_LINKED")) {
                byte[] packed = CompressorFactory.getCompressor(type).compress(plain, 5);
                Files.write(dir.resolve("java_" + name + ".bin"), packed);
            }
        }

        for (String line : Files.readAllLines(dir.resolve("strings.txt"))) {
            out.add("hash\t" + line + "\t" + str(line).hashCode());
        }

        List<Message> batch = new ArrayList<>();
        for (String line : Files.readAllLines(dir.resolve("batch.txt"))) {
            String[] parts = line.split("\t", -1);
            Message m = new Message();
            m.setFlag(Integer.parseInt(parts[0]));
            m.setBody(Describe.unhex(parts[1]));
            for (String kv : parts[2].split(",")) {
                if (kv.isEmpty()) {
                    continue;
                }
                String[] pair = kv.split("=");
                MessageAccessor.putProperty(m, str(pair[0]), str(pair[1]));
            }
            batch.add(m);
        }
        Files.write(dir.resolve("batch.bin"), MessageDecoder.encodeMessages(batch));

        // The parser on odd strings, and the order the broker re-serialises a parsed map in.
        for (String line : Files.readAllLines(dir.resolve("properties.txt"))) {
            Map<String, String> parsed = MessageDecoder.string2messageProperties(str(line));
            String again = MessageDecoder.messageProperties2String(parsed);
            out.add("properties\t" + line + "\t" + props(parsed) + "\t"
                + Describe.hex(again.getBytes(StandardCharsets.UTF_8)));
        }

        long before = System.currentTimeMillis();
        String first = MessageClientIDSetter.createUniqID();
        String second = MessageClientIDSetter.createUniqID();
        long after = System.currentTimeMillis();
        // getNearlyTimeFromID takes an id made in this very millisecond for one from last month.
        Thread.sleep(5);
        for (String id : new String[] {first, second}) {
            long queryAt = System.currentTimeMillis();
            out.add(String.join("\t", "uniq", id, Describe.hex(MessageClientIDSetter.getIPFromID(id)),
                "" + MessageClientIDSetter.getPidFromID(id),
                "" + MessageClientIDSetter.getNearlyTimeFromID(id).getTime(), "" + before, "" + after,
                "" + queryAt));
        }
        for (String row : out) {
            rows.println(row);
        }
    }
}
