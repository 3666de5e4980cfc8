// swift-tools-version:6.1
// herald: a bulk push-campaign runner for APNs. One module per pipeline stage; dependencies point
// one way: Core <- Job, Audience, Payload, State, Delivery, Simulator; State <- Reports <- Operations; Delivery <- Operations;
// all of them <- Pipeline <- herald. Each target declares exactly the modules its files import
// (docs/architecture.md has the diagram and the check).
import PackageDescription

let package = Package(
    name: "herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
    ],
    targets: [
        // C libraries, each wrapped once: one module imports each.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // statfs(2), which Swift's Glibc module does not bring in (the state directory's filesystem type).
        .systemLibrary(name: "CStatfs"),
        // One HTTP/2 client connection on nghttp2 and OpenSSL: every APNs push goes through it
        // (connection.c says why herald drives nghttp2 itself).
        .target(name: "CHTTP2Client", linkerSettings: [.linkedLibrary("nghttp2"), .linkedLibrary("ssl"), .linkedLibrary("crypto")]),

        .target(name: "HeraldCore"),
        // Instrumentation that only tests switch on (HERALD_TEST_STALL_AT): inert otherwise, and
        // kept out of the stages' own types.
        .target(name: "HeraldTestHooks"),
        .target(name: "HeraldJob", dependencies: [
            "HeraldCore", .product(name: "Yams", package: "Yams"),
        ]),
        .target(name: "HeraldAudience", dependencies: ["HeraldCore", "CZlib"]),
        .target(name: "HeraldPayload", dependencies: ["HeraldCore", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "HeraldState", dependencies: [
            "HeraldCore", "HeraldTestHooks", "CStatfs", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
        ]),
        .target(name: "HeraldDelivery", dependencies: ["HeraldCore", "CCurl", "COpenSSL", "CHTTP2Client"]),
        .target(name: "HeraldReports", dependencies: ["HeraldCore", "HeraldState", "HeraldTestHooks", "CZlib"]),
        .target(name: "HeraldSimulator", dependencies: [
            "HeraldCore",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
        ]),
        // What an operator sees and steers beside a run: log lines and their redaction, progress,
        // the metrics file, sharding, cron monitor pings (over HeraldDelivery's HTTPCall), systemd notifications,
        // delivery events from the state file's outbox to a webhook or a file.
        .target(name: "HeraldOperations", dependencies: [
            "HeraldCore", "HeraldState", "HeraldReports", "HeraldDelivery",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .target(name: "HeraldPipeline", dependencies: [
            "HeraldCore", "HeraldJob", "HeraldAudience", "HeraldPayload", "HeraldState",
            "HeraldDelivery", "HeraldReports", "HeraldSimulator", "HeraldOperations", "HeraldTestHooks",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .executableTarget(name: "herald", dependencies: [
            "HeraldPipeline", "HeraldOperations", "HeraldSimulator", "HeraldJob", "HeraldCore", "HeraldAudience", "HeraldPayload",
            "HeraldState", "HeraldReports", "HeraldDelivery",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // `make bench`: single-stage micro-benchmarks (the end-to-end figures come from the herald binary).
        .executableTarget(name: "herald-bench", dependencies: ["HeraldCore", "HeraldState", "HeraldTestSupport"], path: "Benchmarks/Sources/herald-bench"),

        // `make bench` (Benchmarks/render_bench.py): payload rendering throughput on one core, release build.
        .executableTarget(name: "render-bench", dependencies: ["HeraldPayload", "HeraldJob", "HeraldCore"], path: "Benchmarks/render_bench"),

        .target(name: "HeraldTestSupport", dependencies: ["HeraldCore", "HeraldSimulator"], path: "Tests/HeraldTestSupport"),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore"]),
        .testTarget(name: "HeraldJobTests", dependencies: ["HeraldJob", "HeraldCore", "HeraldTestSupport"]),
        .testTarget(name: "HeraldAudienceTests", dependencies: ["HeraldAudience", "HeraldTestSupport"]),
        .testTarget(name: "HeraldPayloadTests", dependencies: ["HeraldPayload", "HeraldTestSupport"]),
        .testTarget(name: "HeraldStateTests", dependencies: ["HeraldState", "HeraldCore", "HeraldTestSupport"]),
        .testTarget(name: "HeraldDeliveryTests", dependencies: [
            "HeraldDelivery", "HeraldSimulator", "HeraldTestSupport", "CHTTP2Client",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
        ]),
        .testTarget(name: "HeraldSimulatorTests", dependencies: [
            "HeraldSimulator", "HeraldDelivery", "HeraldCore", "HeraldJob", "HeraldTestSupport", "CHTTP2Client",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
        ]),
        .testTarget(name: "HeraldEndToEndTests", dependencies: ["HeraldTestSupport", "HeraldCore", "HeraldPayload"]),
        .testTarget(name: "HeraldReportsTests", dependencies: ["HeraldReports", "HeraldState", "HeraldCore", "HeraldTestSupport"]),
        .testTarget(name: "HeraldOperationsTests", dependencies: [
            "HeraldOperations", "HeraldState", "HeraldCore", "HeraldJob", "HeraldTestSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "HeraldPipelineTests", dependencies: [
            "HeraldPipeline", "HeraldJob", "HeraldCore", "HeraldState", "HeraldAudience", "HeraldReports", "HeraldPayload", "HeraldTestSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
