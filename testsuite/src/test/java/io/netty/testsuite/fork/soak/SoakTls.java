/*
 * Copyright 2026 The Netty Project
 *
 * The Netty Project licenses this file to you under the Apache License,
 * version 2.0 (the "License"); you may not use this file except in compliance
 * with the License. You may obtain a copy of the License at:
 *
 *   https://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 * WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 * License for the specific language governing permissions and limitations
 * under the License.
 */
package io.netty.testsuite.fork.soak;

import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.codec.http2.Http2SecurityUtil;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolConfig.Protocol;
import io.netty.handler.ssl.ApplicationProtocolConfig.SelectedListenerFailureBehavior;
import io.netty.handler.ssl.ApplicationProtocolConfig.SelectorFailureBehavior;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.ReferenceCountedOpenSslEngine;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.SupportedCipherSuiteFilter;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import io.netty.util.ReferenceCountUtil;

import java.util.Locale;

import javax.net.ssl.SSLSession;

/**
 * The TLS of one soak configuration: a self-signed certificate made for the run, and server and client contexts of
 * one provider that offer only h2 by ALPN (HTTP/2's cipher suites). The client checks the server's certificate and
 * name. Released with {@link #close()} before the run's leak check (OpenSSL's contexts and engines are reference
 * counted and tracked by the leak detector).
 */
final class SoakTls implements AutoCloseable {
    /** The name the certificate is made for and the clients ask for (the connections go to 127.0.0.1). */
    static final String HOST = "localhost";

    /** How a configuration's connections carry HTTP/2. */
    enum Mode {
        /** h2c with prior knowledge. */
        NONE(null),
        /** TLS with ALPN h2 on OpenSSL's engine (netty-tcnative's BoringSSL), at both ends. */
        OPENSSL(SslProvider.OPENSSL),
        /** TLS with ALPN h2 on the JDK's {@code SSLEngine}, at both ends. */
        JDK(SslProvider.JDK);

        final SslProvider provider;

        Mode(SslProvider provider) {
            this.provider = provider;
        }

        /** The configuration's name in {@code soak.configs}: {@code io_uring/codec/openssl}. */
        String key() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** The configuration's label in the report: {@code io_uring frame-codec TLS/OpenSSL}. */
        String label() {
            switch (this) {
                case OPENSSL: return "TLS/OpenSSL";
                case JDK: return "TLS/JDK";
                default: return "h2c";
            }
        }
    }

    final Mode mode;
    private final SslContext server;
    private final SslContext client;

    SoakTls(Mode mode) throws Exception {
        if (mode == Mode.NONE) {
            throw new IllegalArgumentException("no TLS in mode " + mode);
        }
        this.mode = mode;
        if (mode == Mode.OPENSSL) {
            // Fails the configuration (never skips it) when netty-tcnative is missing.
            OpenSsl.ensureAvailability();
            if (!OpenSsl.isAlpnSupported()) {
                throw new IllegalStateException("OpenSSL " + OpenSsl.versionString() + " without ALPN");
            }
        }
        X509Bundle certificate = new CertificateBuilder()
                .subject("CN=" + HOST)
                .addSanDnsName(HOST)
                .setIsCertificateAuthority(true)
                .buildSelfSigned();
        SslContext serverContext = h2(SslContextBuilder.forServer(certificate.getKeyPair().getPrivate(),
                certificate.getCertificatePath()));
        try {
            client = h2(SslContextBuilder.forClient().trustManager(certificate.getCertificate()));
        } catch (Exception | Error e) {
            ReferenceCountUtil.release(serverContext);
            throw e;
        }
        server = serverContext;
    }

    private SslContext h2(SslContextBuilder builder) throws Exception {
        return builder.sslProvider(mode.provider)
                .ciphers(Http2SecurityUtil.CIPHERS, SupportedCipherSuiteFilter.INSTANCE)
                .applicationProtocolConfig(new ApplicationProtocolConfig(Protocol.ALPN,
                        SelectorFailureBehavior.NO_ADVERTISE, SelectedListenerFailureBehavior.ACCEPT,
                        ApplicationProtocolNames.HTTP_2))
                .build();
    }

    SslHandler newServerHandler(ByteBufAllocator alloc) {
        return server.newHandler(alloc);
    }

    /** A client handler that asks for and checks {@link #HOST} (SNI and the certificate's name). */
    SslHandler newClientHandler(ByteBufAllocator alloc, int port) {
        return client.newHandler(alloc, HOST, port);
    }

    /**
     * What is wrong with a completed handshake: not h2 by ALPN, or not on the engine of this mode's provider;
     * {@code null} if nothing.
     */
    String problem(SslHandler handler) {
        boolean openSsl = handler.engine() instanceof ReferenceCountedOpenSslEngine;
        if (!ApplicationProtocolNames.HTTP_2.equals(handler.applicationProtocol())) {
            return "ALPN agreed on " + handler.applicationProtocol() + ", not h2";
        }
        if (openSsl != (mode == Mode.OPENSSL)) {
            return "engine " + handler.engine().getClass().getName() + " for " + mode;
        }
        return null;
    }

    /** The protocol, cipher suite and engine of a completed handshake, for the report's header. */
    static String describe(SslHandler handler) {
        SSLSession session = handler.engine().getSession();
        return session.getProtocol() + " " + session.getCipherSuite() + " on "
                + handler.engine().getClass().getSimpleName() + ", ALPN " + handler.applicationProtocol();
    }

    @Override
    public void close() {
        ReferenceCountUtil.release(server);
        ReferenceCountUtil.release(client);
    }
}
