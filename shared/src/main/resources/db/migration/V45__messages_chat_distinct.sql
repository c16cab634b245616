-- Every statement runs on a generic plan (plan_cache_mode = force_generic_plan, Database.connect), which estimates a
-- chat's rows as the table's rows over the number of distinct chats. With few chats holding many messages (a personal
-- bot with one long chat, or a bench's 64 chats before 10,000 new ones arrive), that estimate is large, and a chat's
-- newest messages ("WHERE chat_id = $1 ... ORDER BY id DESC LIMIT n") were read backwards through messages_pkey,
-- filtering on the chat: for a new chat, or one whose messages are old, that walks every row of the table. Measured
-- (issue 19): a new chat's load took 9.5 ms among 64 chats of 625 messages, 106 ms beside one chat of 200,000,
-- against 0.12 ms through messages_chat. Per-chat reads of messages always want messages_chat (chat_id, id); telling
-- the planner that a chat is a small share of the table (on average 20 rows, whatever the real mix) makes it choose
-- that index for every chat, large or small: an index on the chat cannot be the wrong choice for one chat's rows.
ALTER TABLE messages ALTER COLUMN chat_id SET (n_distinct = -0.05);
-- The setting takes effect at the next ANALYZE; a small sample, so quick on a large table too.
ANALYZE messages;
