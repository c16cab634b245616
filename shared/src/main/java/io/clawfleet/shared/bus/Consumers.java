package io.clawfleet.shared.bus;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Registers event-bus consumers, riding out transient cluster errors: while the membership
 * settles (a member just left or joined), a registration can fail with a stale target. It is
 * retried with backoff instead of failing the node.
 */
public final class Consumers {

    private static final Logger LOG = LoggerFactory.getLogger(Consumers.class);
    private static final int ATTEMPTS = 8;
    private static final long FIRST_BACKOFF_MS = 250;

    private Consumers() {
    }

    public static <T> Future<MessageConsumer<T>> register(Vertx vertx, String address, Handler<Message<T>> handler) {
        Promise<MessageConsumer<T>> result = Promise.promise();
        attempt(vertx, address, handler, 1, result);
        return result.future();
    }

    private static <T> void attempt(Vertx vertx, String address, Handler<Message<T>> handler, int attempt,
                                    Promise<MessageConsumer<T>> result) {
        MessageConsumer<T> consumer = vertx.eventBus().consumer(address, handler);
        consumer.completion().onComplete(registered -> {
            if (registered.succeeded()) {
                result.complete(consumer);
                return;
            }
            consumer.unregister();
            if (attempt >= ATTEMPTS) {
                result.fail(registered.cause());
                return;
            }
            long delay = FIRST_BACKOFF_MS << Math.min(attempt - 1, 4);
            LOG.warn("event-bus registration failed, retrying in {} ms [address: {}, attempt: {}]: {}", delay, address,
                    attempt, registered.cause().toString());
            vertx.setTimer(delay, id -> attempt(vertx, address, handler, attempt + 1, result));
        });
    }
}
