package io.clawfleet.shared.cluster;

import java.util.List;
import java.util.function.Consumer;

/** Membership of a node that is not clustered: itself, always. */
public final class LocalMembership implements Membership {

    private final Member self;

    public LocalMembership(Member self) {
        this.self = self;
    }

    @Override
    public Member self() {
        return self;
    }

    @Override
    public List<Member> members() {
        return List.of(self);
    }

    @Override
    public void onChange(Consumer<MembershipChange> listener) {
        // Nobody else ever joins or leaves.
    }
}
