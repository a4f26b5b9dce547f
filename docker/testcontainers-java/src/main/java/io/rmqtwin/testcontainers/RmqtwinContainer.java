package io.rmqtwin.testcontainers;

import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.HealthCheck;
import com.github.dockerjava.api.model.PortBinding;
import com.github.dockerjava.api.model.Ports;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * rmqtwin's namesrv + broker ({@code rmqtwin serve}) in a container, for tests that use the unchanged
 * RocketMQ client: {@code producer.setNamesrvAddr(twin.getNamesrvAddress())}.
 *
 * <p>A client dials the broker address the name server hands out, so the broker's port is a free
 * port published 1:1 on the host's loopback and advertised as {@code 127.0.0.1}; the name server's
 * port is published on the loopback too. Started means the image's probe got a route for TBW102
 * from the name server (a broker has registered), checked every second (faster probes compete with the
 * starting twin for the cores), not that a port is open.
 */
public class RmqtwinContainer extends GenericContainer<RmqtwinContainer> {
    public static final String DEFAULT_IMAGE = "rmqtwin:local";
    public static final int NAMESRV_PORT = 9876;
    private static final String LOOPBACK = "127.0.0.1";

    private final int brokerPort;
    private final int namesrvHostPort;

    public RmqtwinContainer() {
        this(DockerImageName.parse(System.getProperty("rmqtwin.image", DEFAULT_IMAGE)));
    }

    public RmqtwinContainer(DockerImageName image) {
        super(image);
        this.brokerPort = freePort();
        this.namesrvHostPort = freePort();
        withExposedPorts(NAMESRV_PORT, brokerPort);
        withCommand(
            "serve",
            "--host=0.0.0.0",
            "--namesrv-port=" + NAMESRV_PORT,
            "--broker-port=" + brokerPort,
            "--advertise=" + LOOPBACK,
            "--store=/data/store");
        withCreateContainerCmdModifier(cmd -> {
            // Both ports on the loopback only, the broker's at the same number it advertises.
            cmd.getHostConfig().withPortBindings(List.of(
                new PortBinding(Ports.Binding.bindIpAndPort(LOOPBACK, namesrvHostPort),
                    ExposedPort.tcp(NAMESRV_PORT)),
                new PortBinding(Ports.Binding.bindIpAndPort(LOOPBACK, brokerPort), ExposedPort.tcp(brokerPort))));
            cmd.withHealthcheck(new HealthCheck()
                .withTest(List.of("CMD", "python3", "-m", "rmqtwin.probe", LOOPBACK + ":" + NAMESRV_PORT))
                .withInterval(TimeUnit.SECONDS.toNanos(1))
                .withTimeout(TimeUnit.SECONDS.toNanos(3))
                .withStartPeriod(TimeUnit.SECONDS.toNanos(60))
                .withRetries(240));
        });
        waitingFor(Wait.forHealthcheck().withStartupTimeout(Duration.ofSeconds(90)));
    }

    /** {@code 127.0.0.1:PORT}: what a client on the host puts in namesrvAddr. */
    public String getNamesrvAddress() {
        return LOOPBACK + ":" + namesrvHostPort;
    }

    /** {@code 127.0.0.1:PORT}: the broker address the name server routes topics to. */
    public String getBrokerAddress() {
        return LOOPBACK + ":" + brokerPort;
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(LOOPBACK))) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
