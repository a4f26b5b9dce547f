package rmqtwin.conformance;

import com.google.gson.JsonObject;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * A load producer in the manner of RocketMQ's own benchmark Producer: N threads send fixed-size
 * bodies for a while, sync or async (bounded in flight), then one summary with TPS and latency.
 *
 * <p>Spec: namesrv, topic, group, threads, bodySize, mode (sync|async), durationMs, warmupMs,
 * inflight (async, per thread), sendTimeoutMs.
 */
public final class BenchmarkProducer {
    private BenchmarkProducer() {
    }

    public static void main(String[] args) {
        Events.run("benchmark_producer", args, BenchmarkProducer::run);
    }

    /** Latencies in microseconds, one growing array per thread, merged at the end. */
    static final class Recorder {
        long[] values = new long[1 << 14];
        int size;

        synchronized void add(long micros) {
            if (size == values.length) {
                values = Arrays.copyOf(values, size * 2);
            }
            values[size++] = micros;
        }
    }

    static void run(JsonObject spec) throws Exception {
        long start = System.nanoTime();
        String topic = Events.required(spec, "topic");
        int threads = (int) Events.num(spec, "threads", 4);
        int bodySize = (int) Events.num(spec, "bodySize", 128);
        String mode = Events.str(spec, "mode", "sync");
        long durationMs = Events.num(spec, "durationMs", 5000);
        long warmupMs = Events.num(spec, "warmupMs", 1000);
        int inflight = (int) Events.num(spec, "inflight", 32);
        DefaultMQProducer producer = new DefaultMQProducer(Events.str(spec, "group", "rmqtwin_benchmark_producer"));
        Events.connect(producer, Events.required(spec, "namesrv"), Events.instanceName("bench"), spec);
        producer.setSendMsgTimeout((int) Events.num(spec, "sendTimeoutMs", 5000));
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.start();
        byte[] body = new byte[bodySize];
        for (int i = 0; i < bodySize; i++) {
            body[i] = (byte) ('a' + i % 26);
        }
        // Warm-up: route look-up, topic auto-creation, connection and JIT, not measured. It
        // lasts warmupMs and until one send succeeded (at most warmupMs + 30 s).
        long warmStart = System.currentTimeMillis();
        boolean warmed = false;
        while (System.currentTimeMillis() - warmStart < warmupMs
            || !warmed && System.currentTimeMillis() - warmStart < warmupMs + 30_000) {
            try {
                warmed |= producer.send(new Message(topic, body)).getSendStatus() == SendStatus.SEND_OK;
            } catch (Exception ignored) {
                Thread.sleep(100);
            }
        }

        Recorder[] recorders = new Recorder[threads];
        AtomicLong ok = new AtomicLong();
        AtomicLong failures = new AtomicLong();
        Map<String, Object> firstError = new java.util.concurrent.ConcurrentHashMap<>();
        Thread[] workers = new Thread[threads];
        long begin = System.nanoTime();
        long end = begin + TimeUnit.MILLISECONDS.toNanos(durationMs);
        for (int t = 0; t < threads; t++) {
            Recorder rec = new Recorder();
            recorders[t] = rec;
            Semaphore window = new Semaphore(inflight);
            workers[t] = new Thread(() -> {
                while (System.nanoTime() < end) {
                    Message msg = new Message(topic, body);
                    long sent = System.nanoTime();
                    try {
                        if ("async".equals(mode)) {
                            window.acquire();
                            producer.send(msg, new SendCallback() {
                                @Override
                                public void onSuccess(SendResult r) {
                                    rec.add((System.nanoTime() - sent) / 1000);
                                    ok.incrementAndGet();
                                    window.release();
                                }

                                @Override
                                public void onException(Throwable e) {
                                    failures.incrementAndGet();
                                    firstError.putIfAbsent("error", Events.error(e));
                                    window.release();
                                }
                            });
                        } else {
                            SendResult r = producer.send(msg);
                            rec.add((System.nanoTime() - sent) / 1000);
                            if (r.getSendStatus() == SendStatus.SEND_OK) {
                                ok.incrementAndGet();
                            } else {
                                failures.incrementAndGet();
                            }
                        }
                    } catch (Exception e) {
                        failures.incrementAndGet();
                        firstError.putIfAbsent("error", Events.error(e));
                    }
                }
                try {
                    window.acquire(inflight);
                } catch (InterruptedException ignored) {
                    Thread.currentThread().interrupt();
                }
            }, "bench-" + t);
            workers[t].start();
        }
        for (Thread w : workers) {
            w.join();
        }
        double seconds = (System.nanoTime() - begin) / 1e9;
        producer.shutdown();

        int n = 0;
        for (Recorder r : recorders) {
            n += r.size;
        }
        long[] all = new long[n];
        int at = 0;
        for (Recorder r : recorders) {
            System.arraycopy(r.values, 0, all, at, r.size);
            at += r.size;
        }
        Arrays.sort(all);
        long sum = 0;
        for (long v : all) {
            sum += v;
        }
        Map<String, Object> summary = Events.summary("benchmark_producer", start);
        summary.put("mode", mode);
        summary.put("threads", threads);
        summary.put("bodySize", bodySize);
        summary.put("durationMs", Math.round(seconds * 1000));
        summary.put("sent", ok.get());
        summary.put("failures", failures.get());
        summary.put("tps", ok.get() / seconds);
        summary.put("latencyAvgMs", n == 0 ? null : sum / (double) n / 1000.0);
        summary.put("latencyP50Ms", n == 0 ? null : all[(int) Math.min(n - 1, Math.floor(n * 0.50))] / 1000.0);
        summary.put("latencyP99Ms", n == 0 ? null : all[(int) Math.min(n - 1, Math.floor(n * 0.99))] / 1000.0);
        summary.put("latencyMaxMs", n == 0 ? null : all[n - 1] / 1000.0);
        summary.put("firstError", firstError.get("error"));
        Events.emit(summary);
    }
}
