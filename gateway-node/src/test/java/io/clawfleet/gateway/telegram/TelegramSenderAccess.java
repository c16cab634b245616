package io.clawfleet.gateway.telegram;

import java.util.List;

/** Test access to the package-private splitting rule. */
public final class TelegramSenderAccess {

    private TelegramSenderAccess() {
    }

    public static List<String> split(String text) {
        return TelegramSender.split(text);
    }
}
