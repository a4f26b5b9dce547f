package rmqtwin.golden;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HexFormat;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageExtBatch;

/**
 * The 4.9.7 broker's batch encoder (rocketmq-store 4.9.8 is not published): CommitLog.MessageExtEncoder
 * is a package-private corner, reached by reflection. {@code encoder WORKDIR} encodes WORKDIR/batch.bin
 * as a batch put and prints the row {@code batch<TAB>hex}.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream rows = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (args.length != 2 || !args[0].equals("encoder")) {
            System.err.println("usage: encoder WORKDIR");
            System.exit(2);
        }
        Path dir = Paths.get(args[1]);
        Class<?> encoderClass = Class.forName("org.apache.rocketmq.store.CommitLog$MessageExtEncoder");
        Constructor<?> newEncoder = encoderClass.getDeclaredConstructor(int.class);
        newEncoder.setAccessible(true);
        Object encoder = newEncoder.newInstance(4 * 1024 * 1024);
        Class<?> contextClass = Class.forName("org.apache.rocketmq.store.CommitLog$PutMessageContext");
        Constructor<?> newContext = contextClass.getDeclaredConstructor(String.class);
        newContext.setAccessible(true);
        Method encode = encoderClass.getDeclaredMethod("encode", MessageExtBatch.class, contextClass);
        encode.setAccessible(true);

        MessageExtBatch batch = new MessageExtBatch();
        batch.setTopic("BatchTopic");
        batch.setQueueId(2);
        batch.setBody(Files.readAllBytes(dir.resolve("batch.bin")));
        batch.setBornTimestamp(111L);
        batch.setStoreTimestamp(222L);
        batch.setBornHost(new InetSocketAddress(InetAddress.getByName("10.1.1.1"), 40000));
        batch.setStoreHost(new InetSocketAddress(InetAddress.getByName("10.0.0.5"), 10911));
        MessageAccessor.putProperty(batch, "WAIT", "true");
        MessageAccessor.putProperty(batch, "CLUSTER", "DefaultCluster");
        Object context = newContext.newInstance("BatchTopic-2");
        ByteBuffer encoded = (ByteBuffer) encode.invoke(encoder, batch, context);
        byte[] out = new byte[encoded.remaining()];
        encoded.get(out);
        rows.println("batch\t" + HexFormat.of().formatHex(out));
        rows.flush();
    }
}
