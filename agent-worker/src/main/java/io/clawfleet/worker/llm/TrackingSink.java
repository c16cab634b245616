package io.clawfleet.worker.llm;

/** Passes deltas on and remembers whether any went out: after the first, a call may no longer be retried. */
final class TrackingSink implements StreamSink {

    private final StreamSink delegate;
    private boolean emitted;

    TrackingSink(StreamSink delegate) {
        this.delegate = delegate;
    }

    @Override
    public void delta(String text) {
        if (text == null || text.isEmpty()) {
            return;
        }
        // Set first: a sink that throws may still have shown the text to someone.
        emitted = true;
        if (delegate != null) {
            delegate.delta(text);
        }
    }

    boolean emitted() {
        return emitted;
    }
}
