package io.clawfleet.gateway.slack;

/**
 * A Slack chat: a conversation of an account, and the thread in it, when the chat is one. A direct message is one chat
 * (its top-level messages; a thread started in it is a chat of its own); in a channel every thread is a chat, and a
 * top-level message that reaches the bot starts one, answered in that thread. The chat key is
 * {@code <account id>:<conversation>[:<thread ts>]}; the chat id the access rules and notices use is the same without
 * the account.
 *
 * @param threadTs the {@code ts} of the thread's first message; null for a direct message's top level
 */
record SlackChat(long accountId, String conversation, String threadTs) {

    /** The chat a message is in: {@code ts} is its own timestamp, {@code threadTs} the thread's, when it is in one. */
    static SlackChat of(long accountId, String conversation, String ts, String threadTs) {
        if (threadTs != null) {
            return new SlackChat(accountId, conversation, threadTs);
        }
        return new SlackChat(accountId, conversation, isDirect(conversation) ? null : ts);
    }

    /** Slack names direct-message conversations {@code D...}; channels, private channels and group DMs otherwise. */
    static boolean isDirect(String conversation) {
        return conversation.startsWith("D");
    }

    /** A chat id as {@link #chatId()} gives it, of account {@code accountId}. */
    static SlackChat ofChatId(long accountId, String chatId) {
        int colon = chatId.indexOf(':');
        return colon < 0 ? new SlackChat(accountId, chatId, null)
                : new SlackChat(accountId, chatId.substring(0, colon), chatId.substring(colon + 1));
    }

    /** The chat a key names, or null when it is not a Slack chat key. */
    static SlackChat parse(String chatKey) {
        int colon = chatKey.indexOf(':');
        if (colon <= 0 || colon == chatKey.length() - 1) {
            return null;
        }
        try {
            return ofChatId(Long.parseLong(chatKey.substring(0, colon)), chatKey.substring(colon + 1));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    String chatId() {
        return threadTs == null ? conversation : conversation + ":" + threadTs;
    }

    String chatKey() {
        return accountId + ":" + chatId();
    }
}
