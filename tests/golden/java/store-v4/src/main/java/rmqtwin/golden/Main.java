package rmqtwin.golden;

import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Path;
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
        Path dir = StoreOracle.workDir(args);
        PrintStream rows = StoreOracle.rows();
        Class<?> encoderClass = Class.forName("org.apache.rocketmq.store.CommitLog$MessageExtEncoder");
        Constructor<?> newEncoder = encoderClass.getDeclaredConstructor(int.class);
        newEncoder.setAccessible(true);
        Object encoder = newEncoder.newInstance(4 * 1024 * 1024);
        Class<?> contextClass = Class.forName("org.apache.rocketmq.store.CommitLog$PutMessageContext");
        Constructor<?> newContext = contextClass.getDeclaredConstructor(String.class);
        newContext.setAccessible(true);
        Method encode = encoderClass.getDeclaredMethod("encode", MessageExtBatch.class, contextClass);
        encode.setAccessible(true);

        Object context = newContext.newInstance("BatchTopic-2");
        ByteBuffer encoded = (ByteBuffer) encode.invoke(encoder, StoreOracle.batch(dir, "10.0.0.5"), context);
        byte[] out = new byte[encoded.remaining()];
        encoded.get(out);
        rows.println("batch\t" + StoreOracle.HEX.formatHex(out));
        rows.flush();
    }
}
