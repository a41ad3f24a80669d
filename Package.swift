// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "OutaTime",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "outatime-server", targets: ["outatime-server"]),
        .library(name: "OutaTimeServer", targets: ["OutaTimeServer"]),
        .library(name: "OutaTimeProtocol", targets: ["OutaTimeProtocol"]),
        .library(name: "OutaTimeClient", targets: ["OutaTimeClient"]),
        .executable(name: "outatime", targets: ["outatime"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"]), .brew(["libuv"])]
        ),
        // OpenSSL 3, seen only by the UV module (TLSContext, TLSStream, SHA256).
        .systemLibrary(
            name: "CLibSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        .target(name: "UV", dependencies: ["CLibUV", "CLibSSL"]),
        // libnats 3.4 (cluster mode), seen only by the NATS module.
        .systemLibrary(
            name: "CNats",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"])]
        ),
        .target(name: "NATS", dependencies: ["CNats"]),
        // Cluster mode: the JetStream-backed DurableStore, membership and the ClusterFabric on core NATS.
        .target(
            name: "OutaTimeCluster",
            dependencies: [
                // OutaTimeServer for the ClusterFabric seam NATSClusterFabric implements (it does not depend on this module).
                "NATS", "OutaTimeStore", "OutaTimeServer",
                // Heap: the fabric's send deadlines.
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        .target(name: "OutaTimeProtocol"),
        .target(
            name: "OutaTimeDomain",
            dependencies: [
                "OutaTimeProtocol",
                // Heap: the earliest due moment of a list or board without a scan.
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "OutaTimeStore",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                // The SQLite C API, for the one statement bound by hand (Store+Writes.swift).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "OutaTimeServer",
            dependencies: [
                "UV", "OutaTimeProtocol", "OutaTimeDomain", "OutaTimeStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                // Heap: the scheduler's earliest deadline (DeadlineHeap).
                .product(name: "HeapModule", package: "swift-collections"),
                // `/metrics`: the Prometheus text format (no SwiftNIO needed).
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(name: "OutaTimeClient", dependencies: ["UV", "OutaTimeProtocol", "OutaTimeDomain"]),
        .executableTarget(
            name: "outatime",
            dependencies: [
                "OutaTimeClient", "OutaTimeProtocol", "OutaTimeDomain", "UV",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "clients/terminal"
        ),
        .executableTarget(
            name: "outatime-server",
            dependencies: [
                "OutaTimeServer", "OutaTimeProtocol", "OutaTimeCluster",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "outatime-load",
            dependencies: [
                "UV", "OutaTimeProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "clients/load"
        ),
        // Test helpers shared by the test targets (the real server in process).
        .target(
            name: "OutaTimeTestSupport",
            dependencies: ["OutaTimeServer", .product(name: "Logging", package: "swift-log")],
            path: "Tests/OutaTimeTestSupport"
        ),
        // Seeded randomness and encoding helpers shared by the unit tests.
        .target(name: "OutaTimeTestKit", dependencies: ["OutaTimeProtocol"], path: "Tests/OutaTimeTestKit"),
        // The fuzz targets' checks (docs/FUZZING.md): built here without the
        // sanitizer so the tests run them over the seed corpus; `make fuzz`
        // builds them again with `--sanitize fuzzer` in .build-fuzz.
        .target(name: "OutaTimeFuzzChecks", dependencies: ["OutaTimeProtocol", "OutaTimeDomain"], path: "Fuzz/Checks"),
        // Starts real nats-server processes (one, or a 3-node cluster) for the NATS tests.
        .target(name: "NATSTestSupport", dependencies: ["NATS"], path: "Tests/NATSTestSupport"),
        .testTarget(name: "NATSTests", dependencies: ["NATS", "NATSTestSupport"]),
        .testTarget(name: "OutaTimeClusterTests", dependencies: ["OutaTimeCluster", "OutaTimeServer", "OutaTimeStore", "OutaTimeStoreConformance", "NATS", "NATSTestSupport"]),
        .testTarget(name: "UVTests", dependencies: ["UV", "OutaTimeTestKit"]),
        .testTarget(name: "OutaTimeProtocolTests", dependencies: ["OutaTimeProtocol", "OutaTimeTestKit", "UV"]),  // UV: SHA-1 for the WebSocket handshake example
        .testTarget(
            name: "OutaTimeDomainTests",
            dependencies: ["OutaTimeDomain", "OutaTimeProtocol", "OutaTimeTestKit", "OutaTimeFuzzChecks"]
        ),
        // The behaviours every DurableStore keeps, as functions over a
        // backend factory: run against SQLite by OutaTimeStoreTests, and
        // against any other backend by its own tests. No GRDB, no files.
        .target(name: "OutaTimeStoreConformance", dependencies: ["OutaTimeStore"], path: "Tests/OutaTimeStoreConformance"),
        .testTarget(name: "OutaTimeStoreTests", dependencies: ["OutaTimeStore", "OutaTimeStoreConformance"]),
        .testTarget(
            name: "OutaTimeServerTests",
            dependencies: ["OutaTimeServer", "OutaTimeProtocol", "OutaTimeStore", "OutaTimeTestSupport", "OutaTimeTestKit", "NATSTestSupport", "outatime-server", "outatime", "outatime-load"]
        ),
        .testTarget(
            name: "OutaTimeClientTests",
            dependencies: ["OutaTimeClient", "OutaTimeServer", "OutaTimeProtocol", "OutaTimeDomain", "OutaTimeTestSupport", "OutaTimeTestKit"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
