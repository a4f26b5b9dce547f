package rmqtwin.example.spring;

import java.util.Map;
import org.apache.rocketmq.spring.annotation.RocketMQTransactionListener;
import org.apache.rocketmq.spring.core.RocketMQLocalTransactionListener;
import org.apache.rocketmq.spring.core.RocketMQLocalTransactionState;
import org.springframework.messaging.Message;

/**
 * The local transaction: tx-commit commits, tx-rollback rolls back, tx-unknown is left unknown and
 * committed when the broker checks it back (what an application answers from its own records).
 */
@RocketMQTransactionListener
class TransactionListener implements RocketMQLocalTransactionListener {
    static String body(Message<?> message) {
        Object payload = message.getPayload();
        return payload instanceof byte[] bytes ? SpringExample.text(bytes) : String.valueOf(payload);
    }

    @Override
    public RocketMQLocalTransactionState executeLocalTransaction(Message message, Object arg) {
        return switch (body(message)) {
            case "tx-commit" -> RocketMQLocalTransactionState.COMMIT;
            case "tx-rollback" -> RocketMQLocalTransactionState.ROLLBACK;
            default -> RocketMQLocalTransactionState.UNKNOWN;
        };
    }

    @Override
    public RocketMQLocalTransactionState checkLocalTransaction(Message message) {
        String body = body(message);
        Map<String, Object> e = Events.event("checked");
        e.put("body", body);
        Events.emit(e);
        return body.equals("tx-unknown") ? RocketMQLocalTransactionState.COMMIT : RocketMQLocalTransactionState.ROLLBACK;
    }
}
