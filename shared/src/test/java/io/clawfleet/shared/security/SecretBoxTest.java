package io.clawfleet.shared.security;

import org.junit.jupiter.api.Test;

import javax.crypto.SecretKey;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** AES-256-GCM boxes and wrapped data keys: what opens, and what must not. */
class SecretBoxTest {

    private static final byte[] SECRET = "123456:AAE-canary-token-value".getBytes(StandardCharsets.UTF_8);

    @Test
    void aSealedSecretOpensWithItsKeyAndPlace() {
        // given a key and the place a secret belongs
        SecretKey key = SecretBox.key(SecretBox.newKey());
        byte[] aad = SecretBox.aad("clawfleet/secret/v1", "acme", "channel_bots.token", "1");

        // when it is sealed and opened
        byte[] sealed = SecretBox.seal(key, SECRET, aad);

        // then it comes back, and the sealed bytes hold no trace of it
        assertThat(SecretBox.open(key, sealed, aad)).isEqualTo(SECRET);
        assertThat(new String(sealed, StandardCharsets.ISO_8859_1)).doesNotContain("canary");
        assertThat(SecretBox.seal(key, SECRET, aad)).as("a fresh nonce each time").isNotEqualTo(sealed);
    }

    @Test
    void aChangedByteFailsToOpen() {
        SecretKey key = SecretBox.key(SecretBox.newKey());
        byte[] aad = SecretBox.aad("acme", "channel_bots.token");
        byte[] sealed = SecretBox.seal(key, SECRET, aad);
        for (int i : List.of(1, 13, sealed.length - 1)) {
            byte[] tampered = sealed.clone();
            tampered[i] ^= 1;
            assertThatThrownBy(() -> SecretBox.open(key, tampered, aad)).isInstanceOf(SecretException.class);
        }
    }

    @Test
    void aSecretMovedToAnotherTenantOrFieldFailsToOpen() {
        SecretKey key = SecretBox.key(SecretBox.newKey());
        byte[] sealed = SecretBox.seal(key, SECRET, SecretBox.aad("acme", "channel_bots.token"));
        assertThatThrownBy(() -> SecretBox.open(key, sealed, SecretBox.aad("other", "channel_bots.token")))
                .isInstanceOf(SecretException.class);
        assertThatThrownBy(() -> SecretBox.open(key, sealed, SecretBox.aad("acme", "providers.apiKey")))
                .isInstanceOf(SecretException.class);
        // the parts are length-prefixed: moving a separator does not make the same associated data
        assertThat(SecretBox.aad("ab", "c")).isNotEqualTo(SecretBox.aad("a", "bc"));
    }

    @Test
    void aDataKeyWrappedByOneMasterKeyDoesNotUnwrapWithAnotherAndTheErrorNamesTheKey() {
        // given a data key wrapped by master key A
        MasterKeys.MasterKey a = MasterKeys.decode(MasterKeys.generate(), "a");
        MasterKeys.MasterKey b = MasterKeys.decode(MasterKeys.generate(), "b");
        byte[] raw = SecretBox.newKey();
        byte[] wrapped = TenantKeys.wrap(a, "acme", 1, raw);

        // then A unwraps it, B does not, and the error says which key failed
        assertThat(TenantKeys.unwrapWith(a, "acme", 1, wrapped).getEncoded()).isEqualTo(raw);
        assertThatThrownBy(() -> TenantKeys.unwrapWith(b, "acme", 1, wrapped))
                .isInstanceOf(SecretException.class).hasMessageContaining(b.id()).hasMessageContaining("nothing was decrypted");
        assertThatThrownBy(() -> TenantKeys.unwrapWith(a, "other", 1, wrapped)).isInstanceOf(SecretException.class);
    }

    @Test
    void masterKeysMustBeThirtyTwoBytesOfBase64AndTheErrorSaysSo() {
        assertThatThrownBy(() -> MasterKeys.decode("c2hvcnQ=", "CLAWFLEET_MASTER_KEY"))
                .hasMessageContaining("CLAWFLEET_MASTER_KEY").hasMessageContaining("32").hasMessageContaining("got 5 bytes");
        assertThatThrownBy(() -> MasterKeys.decode("not base64 !", "CLAWFLEET_MASTER_KEY"))
                .hasMessageContaining("not base64");
        assertThatThrownBy(() -> MasterKeys.none().current()).hasMessageContaining("CLAWFLEET_MASTER_KEY");
    }

    @Test
    void aKeysIdComesFromTheKeySoTheSameKeyHasTheSameIdEverywhere() {
        String key = MasterKeys.generate();
        assertThat(MasterKeys.decode(key, "x").id()).isEqualTo(MasterKeys.decode(key, "y").id()).startsWith("mk-").hasSize(15);
        assertThat(MasterKeys.decode(MasterKeys.generate(), "z").id()).isNotEqualTo(MasterKeys.decode(key, "x").id());
    }
}
