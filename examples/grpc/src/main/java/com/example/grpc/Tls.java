package com.example.grpc;

import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.ssl.SslContext;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;

import javax.net.ssl.SSLException;
import java.io.ByteArrayInputStream;
import java.io.InputStream;

import static java.nio.charset.StandardCharsets.US_ASCII;

/**
 * TLS as a gRPC-java user sets it up: contexts from {@link GrpcSslContexts} (which takes OpenSSL when
 * netty-tcnative is on the class path, the JDK's provider otherwise), given to {@code NettyServerBuilder.sslContext}
 * and {@code NettyChannelBuilder.sslContext}. The certificate is made at run time, self-signed, for 127.0.0.1.
 */
public final class Tls {
    private Tls() {
    }

    /** A new self-signed certificate (ECDSA P-256) for the IP address 127.0.0.1, with its private key. */
    public static X509Bundle selfSignedFor127001() throws Exception {
        return new CertificateBuilder()
                .subject("CN=localhost")
                .addSanIpAddress("127.0.0.1")
                .setIsCertificateAuthority(true)
                .ecp256()
                .buildSelfSigned();
    }

    /** The server's context: {@code GrpcSslContexts.forServer(certificate chain, private key)}, both PEM. */
    public static SslContext server(X509Bundle certificate) throws SSLException {
        return GrpcSslContexts.forServer(pem(certificate.getCertificatePathPEM()),
                pem(certificate.getPrivateKeyPEM())).build();
    }

    /** The client's context: {@code GrpcSslContexts.forClient()}, trusting {@code certificate} alone. */
    public static SslContext client(X509Bundle certificate) throws SSLException {
        return GrpcSslContexts.forClient().trustManager(certificate.getCertificate()).build();
    }

    private static InputStream pem(String pem) {
        return new ByteArrayInputStream(pem.getBytes(US_ASCII));
    }
}
