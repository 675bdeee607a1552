package com.example.grpc;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.EventLoopGroup;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.Version;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** gRPC-java over the Netty the BOM gives, on io_uring and on epoll: the right jars, every byte intact. */
class GrpcOnForkTest {
    /** The patched modules, from the build ({@code -Dfork.patchedModules}), as artifact ids. */
    private static final Set<String> PATCHED = Arrays.stream(System.getProperty("fork.patchedModules").split(","))
            .map(module -> "netty-" + module.trim()).collect(Collectors.toSet());
    private static final int CALLS = 32;

    @Test
    void patchedModulesAtBomVersionOthersAtBase() {
        Map<String, Version> versions = Version.identify();
        assertTrue(versions.keySet().containsAll(PATCHED), versions.keySet().toString());
        assertTrue(versions.containsKey("netty-handler-proxy"), "grpc-netty's other Netty modules");
        for (Map.Entry<String, Version> e : versions.entrySet()) {
            String expected = PATCHED.contains(e.getKey()) ? System.getProperty("netty.bom.version")
                    : System.getProperty("netty.base.version");
            assertEquals(expected, e.getValue().artifactVersion(), e.getKey());
        }
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void concurrentUnaryCallsOfOneMebibyte(Transport transport) throws Exception {
        int size = 1024 * 1024;
        withServerAndChannel(transport, channel -> {
            List<Future<byte[]>> calls = new ArrayList<>();
            for (int c = 0; c < CALLS; c++) {
                calls.add(ClientCalls.futureUnaryCall(channel.newCall(Bytes.UNARY, CallOptions.DEFAULT),
                        Bytes.request(size, 1, c)));
            }
            for (int c = 0; c < CALLS; c++) {
                byte[] m = calls.get(c).get(60, TimeUnit.SECONDS);
                assertEquals(size, m.length, "call " + c);
                assertEquals(-1, Bytes.firstMismatch(m, c), "call " + c + ": first wrong byte");
            }
        });
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void concurrentServerStreamsOf64KiBMessages(Transport transport) throws Exception {
        int size = 64 * 1024;
        int count = 16;
        withServerAndChannel(transport, channel -> {
            List<CompletableFuture<List<byte[]>>> calls = new ArrayList<>();
            for (int c = 0; c < CALLS; c++) {
                CompletableFuture<List<byte[]>> done = new CompletableFuture<>();
                List<byte[]> messages = new ArrayList<>();
                ClientCalls.asyncServerStreamingCall(channel.newCall(Bytes.STREAM, CallOptions.DEFAULT),
                        Bytes.request(size, count, c * count), new StreamObserver<byte[]>() {
                            @Override
                            public void onNext(byte[] value) {
                                messages.add(value);
                            }

                            @Override
                            public void onError(Throwable t) {
                                done.completeExceptionally(t);
                            }

                            @Override
                            public void onCompleted() {
                                done.complete(messages);
                            }
                        });
                calls.add(done);
            }
            for (int c = 0; c < CALLS; c++) {
                List<byte[]> messages = calls.get(c).get(60, TimeUnit.SECONDS);
                assertEquals(count, messages.size(), "call " + c);
                for (int m = 0; m < count; m++) {
                    assertEquals(size, messages.get(m).length, "call " + c + " message " + m);
                    assertEquals(-1, Bytes.firstMismatch(messages.get(m), c * count + m),
                            "call " + c + " message " + m + ": first wrong byte");
                }
            }
        });
    }

    /** Paranoid leak detection reports when a leaked buffer is collected; collect, then let it report. */
    @AfterAll
    static void noLeakReported() {
        for (int i = 0; i < 3; i++) {
            System.gc();
            ReferenceCountUtil.release(ByteBufAllocator.DEFAULT.buffer(1));
        }
        assertTrue(CountingLeakDetector.LEAKS.isEmpty(), () -> String.join("\n", CountingLeakDetector.LEAKS));
    }

    private interface ChannelTest {
        void run(ManagedChannel channel) throws Exception;
    }

    private static void withServerAndChannel(Transport transport, ChannelTest test) throws Exception {
        transport.ensureAvailable();
        EventLoopGroup boss = transport.newGroup(1, "boss");
        EventLoopGroup workers = transport.newGroup(2, "server");
        EventLoopGroup clientGroup = transport.newGroup(2, "client");
        Server server = Bytes.startServer(transport, boss, workers);
        ManagedChannel channel = Bytes.channel(transport, clientGroup, server.getPort(), null);
        try {
            test.run(channel);
        } finally {
            channel.shutdownNow().awaitTermination(30, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(30, TimeUnit.SECONDS);
            boss.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            workers.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            clientGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }
}
