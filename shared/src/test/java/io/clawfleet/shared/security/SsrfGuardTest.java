package io.clawfleet.shared.security;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetAddress;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SsrfGuardTest {

    private final SsrfGuard guard = new SsrfGuard(List.of());

    @ParameterizedTest
    @ValueSource(strings = {"127.0.0.1", "127.255.255.254", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255",
            "192.168.1.1", "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.100.100.200", "224.0.0.1",
            "255.255.255.255", "240.0.0.1", "192.0.0.170", "198.18.0.1",
            "::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
            "::127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "2002:a9fe:a9fe::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2"})
    void internalAddressesAreBlocked(String address) throws Exception {
        assertThat(guard.refusal(InetAddress.getByName(address))).as(address).isNotNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"93.184.215.14", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111",
            "64:ff9b::808:808", "2002:808:808::1"})
    void publicAddressesPass(String address) throws Exception {
        assertThat(guard.refusal(InetAddress.getByName(address))).as(address).isNull();
    }

    @Test
    void theMetadataAddressIsNamedAsSuch() throws Exception {
        assertThat(guard.refusal(InetAddress.getByName("169.254.169.254"))).contains("metadata");
    }

    @ParameterizedTest
    @CsvSource({
            "2130706433, 127.0.0.1",
            "0x7f000001, 127.0.0.1",
            "017700000001, 127.0.0.1",
            "0177.0.0.1, 127.0.0.1",
            "0x7f.0.0.1, 127.0.0.1",
            "0x7f.1, 127.0.0.1",
            "127.1, 127.0.0.1",
            "127.0.1, 127.0.0.1",
            "2852039166, 169.254.169.254",
            "0xa9.0xfe.0xa9.0xfe, 169.254.169.254",
            "0251.0376.0251.0376, 169.254.169.254",
            "0xA9FEA9FE, 169.254.169.254",
            "169.254.43518, 169.254.169.254",
            "0, 0.0.0.0",
            "10.0.0.1., 10.0.0.1",
            "[::ffff:7f00:1], 127.0.0.1",
            "[0:0:0:0:0:ffff:127.0.0.1], 127.0.0.1",
            "[::1], 0:0:0:0:0:0:0:1"})
    void numericEncodingsAreReadAsBrowsersReadThem(String host, String address) throws Exception {
        InetAddress parsed = SsrfGuard.literal(host);
        assertThat(parsed).isEqualTo(InetAddress.getByName(address));
        assertThat(guard.refusal(parsed)).as(host).isNotNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"example.com", "metadata.google.internal", "127.0.0.1.nip.io", "1e1.example"})
    void namesAreLeftToTheResolver(String host) {
        assertThat(SsrfGuard.literal(host)).isNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"1.2.3.4.5", "256.1.1.1", "0x100000000", "4294967296", "1.2.3.0x100", "09.1.1.1", "[fe80::1%25eth0]",
            "[::1%lo]", "abc.1"})
    void invalidNumericHostsAreRefused(String host) {
        assertThatThrownBy(() -> SsrfGuard.literal(host)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void anExplicitExceptionLetsOneRangeThrough() throws Exception {
        SsrfGuard lenient = new SsrfGuard(List.of("127.0.0.1/32"));
        assertThat(lenient.refusal(InetAddress.getByName("127.0.0.1"))).isNull();
        assertThat(lenient.refusal(InetAddress.getByName("127.0.0.2"))).isNotNull();
        assertThat(lenient.refusal(InetAddress.getByName("169.254.169.254"))).isNotNull();
    }
}
