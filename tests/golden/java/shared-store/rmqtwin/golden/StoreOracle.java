package rmqtwin.golden;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HexFormat;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageExtBatch;

/**
 * What the store modules' {@code encoder WORKDIR} commands share (compiled into store-v4 and store-v5):
 * the command line, result rows on standard output (logs on standard error), and the batch put the
 * broker's encoder is given. MessageExtBatch and MessageAccessor kept their packages in 4.9.x and 5.x.
 */
final class StoreOracle {
    static final HexFormat HEX = HexFormat.of();

    private StoreOracle() {
    }

    /** The work directory of {@code encoder WORKDIR}; exits with the usage otherwise. */
    static Path workDir(String[] args) {
        if (args.length != 2 || !args[0].equals("encoder")) {
            System.err.println("usage: encoder WORKDIR");
            System.exit(2);
        }
        return Paths.get(args[1]);
    }

    /** Standard output for the rows; System.out (what the RocketMQ classes may log to) goes to standard error. */
    static PrintStream rows() {
        PrintStream rows = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        return rows;
    }

    /** WORKDIR/batch.bin (MessageDecoder.encodeMessages items) as a producer's batch put to BatchTopic queue 2. */
    static MessageExtBatch batch(Path dir, String storeIp) throws Exception {
        MessageExtBatch batch = new MessageExtBatch();
        batch.setTopic("BatchTopic");
        batch.setQueueId(2);
        batch.setBody(Files.readAllBytes(dir.resolve("batch.bin")));
        batch.setBornTimestamp(111L);
        batch.setStoreTimestamp(222L);
        batch.setBornHost(new InetSocketAddress(InetAddress.getByName("10.1.1.1"), 40000));
        batch.setStoreHost(new InetSocketAddress(InetAddress.getByName(storeIp), 10911));
        if (storeIp.contains(":")) {
            batch.setStoreHostAddressV6Flag();
        }
        MessageAccessor.putProperty(batch, "WAIT", "true");
        MessageAccessor.putProperty(batch, "CLUSTER", "DefaultCluster");
        return batch;
    }
}
