package io.clawfleet.testkit.mockllm;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A provider's prompt caching. OpenAI's (automatic, {@link #cachedChars}): a request is served from the cache for the
 * longest prefix it shares with an earlier request, counted in steps of 128 tokens and only from 1,024 tokens on.
 * Tokens are taken as 4 characters, as the rest of the mock counts them. The prompt is the text the provider
 * reads in order: the tools, then the messages. Prefixes are remembered by a chained hash per 128-token block, the
 * most recently used {@value #MAX_BLOCKS} at most (real caches also forget, after minutes of quiet). Anthropic's
 * (up to a breakpoint the request names) is {@link #seenBefore}.
 */
final class PromptCache {

    static final int BLOCK_CHARS = 128 * 4;
    static final int MIN_CHARS = 1_024 * 4;
    private static final int MAX_BLOCKS = 200_000;

    private final Map<Long, Boolean> seen = new LinkedHashMap<>(1_024, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
            return size() > MAX_BLOCKS;
        }
    };

    /** Characters of {@code prompt} served from the cache (0 under 1,024 tokens); remembers its prefixes. */
    synchronized int cachedChars(String prompt) {
        long chain = 0x9E3779B97F4A7C15L;
        int cached = 0;
        boolean hitSoFar = true;
        for (int end = BLOCK_CHARS; end <= prompt.length(); end += BLOCK_CHARS) {
            chain = mix(chain, prompt, end - BLOCK_CHARS, end);
            hitSoFar &= seen.put(chain, Boolean.TRUE) != null;
            if (hitSoFar) {
                cached = end;
            }
        }
        return cached >= MIN_CHARS ? cached : 0;
    }

    /**
     * Anthropic's way: the prefix up to a block marked {@code cache_control} is served when an earlier request had
     * the same prefix (and it is 1,024 tokens or more). True when it was seen before; remembers it.
     */
    synchronized boolean seenBefore(String prefix) {
        return seen.put(mix(0xC2B2AE3D27D4EB4FL, prefix, 0, prefix.length()), Boolean.TRUE) != null;
    }

    private static long mix(long chain, String text, int from, int to) {
        long h = chain;
        for (int i = from; i < to; i++) {
            h = (h ^ text.charAt(i)) * 0x100000001B3L;
        }
        return h ^ (h >>> 29);
    }
}
