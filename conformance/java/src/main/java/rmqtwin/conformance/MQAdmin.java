package rmqtwin.conformance;

import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * mqadmin as the tools ship it ({@code MQAdminStartup}), then an exit as soon as the command
 * returned. The command has shut its admin client down by then (its requests are answered, the
 * client unregistered), but the JVM would wait seconds longer for Netty's event loops to finish
 * their graceful shutdown; the output and the exit status are MQAdminStartup's.
 */
public final class MQAdmin {
    private MQAdmin() {
    }

    public static void main(String[] args) {
        MQAdminStartup.main(args);
        System.out.flush();
        System.err.flush();
        System.exit(0);
    }
}
