package com.example.grpc;

import io.netty.util.ResourceLeakDetector;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Netty's leak detector (installed with -Dio.netty.customResourceLeakDetector, paranoid level) that also keeps what it
 * reports, so that a test can fail on a leak instead of only logging it.
 */
public final class CountingLeakDetector<T> extends ResourceLeakDetector<T> {
    static final Queue<String> LEAKS = new ConcurrentLinkedQueue<>();

    public CountingLeakDetector(Class<?> resourceType, int samplingInterval) {
        super(resourceType, samplingInterval);
    }

    /** The constructor Netty's factory tries first (it logs an error when a custom detector lacks it). */
    public CountingLeakDetector(Class<?> resourceType, int samplingInterval, long maxActive) {
        this(resourceType, samplingInterval);
    }

    @Override
    protected void reportTracedLeak(String resourceType, String records) {
        LEAKS.add(resourceType + records);
        super.reportTracedLeak(resourceType, records);
    }

    @Override
    protected void reportUntracedLeak(String resourceType) {
        LEAKS.add(resourceType);
        super.reportUntracedLeak(resourceType);
    }
}
