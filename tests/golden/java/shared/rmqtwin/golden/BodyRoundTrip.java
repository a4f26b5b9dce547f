package rmqtwin.golden;

import java.io.BufferedReader;
import java.io.PrintStream;
import java.util.Base64;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;

/**
 * Bodies the codec wrote, read by this line's body classes and written again by them. One input line
 * {@code mode<TAB>SimpleClassName<TAB>base64}, one output row {@code ok<TAB>base64} or
 * {@code error<TAB>exception}. Modes: std (TopicRouteData, written in the namesrv's standard form), rbc
 * (RegisterBrokerBody, written compressed), rbd (a compressed RegisterBrokerBody, written as JSON), and
 * anything else (RemotingSerializable.decode, then encode).
 */
final class BodyRoundTrip {
    private BodyRoundTrip() {
    }

    static void run(Line line, BufferedReader in, PrintStream out) throws Exception {
        Golden.eachLine(in, request -> {
            String[] p = request.split("\t");
            byte[] data = Base64.getDecoder().decode(p[2]);
            try {
                out.println("ok\t" + Base64.getEncoder().encodeToString(rewrite(line, p[0], line.resolve(p[1]), data)));
            } catch (Throwable e) {
                out.println("error\t" + Golden.field(e));
            }
        });
    }

    static byte[] rewrite(Line line, String mode, Class<?> cls, byte[] data) throws Exception {
        switch (mode) {
            case "std":
                return line.routeStandard((RemotingSerializable) RemotingSerializable.decode(data, cls));
            case "rbc": {
                // RegisterBrokerBody.encode(boolean compress), in both lines
                Object register = RemotingSerializable.decode(data, cls);
                return (byte[]) cls.getMethod("encode", boolean.class).invoke(register, true);
            }
            case "rbd":
                return RemotingSerializable.encode(Vectors.decodeBody(data, cls, "compressed"));
            default:
                return RemotingSerializable.encode(RemotingSerializable.decode(data, cls));
        }
    }
}
