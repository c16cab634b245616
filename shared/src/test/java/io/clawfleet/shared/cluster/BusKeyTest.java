package io.clawfleet.shared.cluster;

import org.junit.jupiter.api.Test;

import java.security.KeyPairGenerator;
import java.security.spec.ECGenParameterSpec;

import static org.assertj.core.api.Assertions.assertThat;

/** Gateways and workers agree pair keys by ECDH, so their bus keys must be EC on the one curve every node uses. */
class BusKeyTest {

    @Test
    void onlyAnEcP256KeyServesForKeyAgreement() throws Exception {
        assertThat(ClusterTls.ecP256(ec("secp256r1").getPrivate())).isTrue();
        assertThat(ClusterTls.ecP256(ec("secp256r1").getPublic())).isTrue();
        assertThat(ClusterTls.ecP256(ec("secp384r1").getPrivate())).isFalse();
        KeyPairGenerator rsa = KeyPairGenerator.getInstance("RSA");
        rsa.initialize(2048);
        assertThat(ClusterTls.ecP256(rsa.generateKeyPair().getPrivate())).isFalse();
        assertThat(ClusterTls.ecP256(KeyPairGenerator.getInstance("Ed25519").generateKeyPair().getPrivate())).isFalse();
    }

    private static java.security.KeyPair ec(String curve) throws Exception {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec(curve));
        return generator.generateKeyPair();
    }
}
