package rmqtwin.golden;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;

/**
 * The commands of a golden module's {@code Main}: the vector generator and verifier, and the oracles the
 * codec tests ask. Result rows (tab-separated) go to standard output; anything the RocketMQ classes log
 * goes to standard error, so it cannot mix with them.
 */
final class Golden {
    private Golden() {
    }

    static void main(Line line, String[] args) throws Exception {
        PrintStream rows = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        String command = args.length == 0 ? "" : args[0];
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (command.equals("generate") && args.length == 2) {
            new Cases(line).generate(Paths.get(args[1]));
        } else if (command.equals("verify") && args.length == 3) {
            Vectors.verify(Paths.get(args[1]), Paths.get(args[2]), line::resolve, line::bodyProperties);
        } else if (command.equals("commands") && args.length == 1) {
            CommandProbe.run(stdin, rows);
        } else if (command.equals("messages") && args.length == 2) {
            MessageOracle.run(Paths.get(args[1]), rows);
        } else if (command.equals("bodies") && args.length == 1) {
            BodyRoundTrip.run(line, stdin, rows);
        } else if (command.equals("fastjson") && args.length == 1) {
            FastjsonProbe.run(line, stdin, rows);
        } else if (command.equals("headers") && args.length == 1) {
            HeaderFields.run(line, stdin, rows);
        } else {
            System.err.println("usage: generate OUTDIR | verify INDIR OUTFILE | commands < SPECS"
                + " | messages WORKDIR | bodies < BODIES | fastjson < VALUES | headers < CLASSES");
            System.exit(2);
        }
        rows.flush();
    }

    /** A command's work on one input line. */
    interface Request {
        void handle(String request) throws Exception;
    }

    /** Hands each non-empty line of standard input to {@code request}, in order. */
    static void eachLine(BufferedReader in, Request request) throws Exception {
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.isEmpty()) {
                request.handle(line);
            }
        }
    }

    /** One output field: tabs and line breaks (in exception texts) would split rows and fields. */
    static String field(Object value) {
        return String.valueOf(value).replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }
}
