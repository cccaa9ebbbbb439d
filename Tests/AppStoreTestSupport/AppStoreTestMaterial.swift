import Foundation

/// Where the App Store tests find their material, all of it inside the repository or made
/// by the test process: Apple's own files in `Tests/Fixtures/app-store` (where the point is
/// agreement with Apple: the real chain to Apple Root CA - G3, Apple's mock signed
/// transaction and the test root that signed it; see `Tests/Fixtures/NOTICE`), and a chain
/// generated once per process (``chain()``) for everything the tests sign themselves.
public enum AppStoreTestMaterial {
    /// The repository root, from this file's place in it.
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()   // Tests/AppStoreTestSupport
        .deletingLastPathComponent()   // Tests
        .deletingLastPathComponent()

    /// `Tests/Fixtures/app-store`.
    public static let fixtures: URL = repositoryRoot.appendingPathComponent("Tests/Fixtures/app-store", isDirectory: true)

    /// The path of a file under `Tests/Fixtures/app-store`.
    public static func fixture(_ relative: String) -> String { fixtures.appendingPathComponent(relative).path }

    /// The bytes of a file under `Tests/Fixtures/app-store`.
    public static func fixtureBytes(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: fixture(relative))))
    }

    private static let generated = Result { try TestCertificateChain.generate() }

    /// This process's test chain, generated on first use.
    public static func chain() throws -> TestCertificateChain { try generated.get() }

    private static let written = Result { () throws -> TestCertificateChainFiles in
        let files = try TestCertificateChainFiles(chain(), in: FileManager.default.temporaryDirectory
            .appendingPathComponent("kidledger-test-chain-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true))
        atexit { try? FileManager.default.removeItem(at: AppStoreTestMaterial.writtenDirectory) }
        return files
    }
    private static var writtenDirectory: URL { (try? written.get().directory) ?? URL(fileURLWithPath: "/nonexistent") }

    /// This process's test chain as files, for what takes paths (a server's trusted roots,
    /// a signer's key); the folder is removed when the process exits.
    public static func chainFiles() throws -> TestCertificateChainFiles { try written.get() }
}

/// A ``TestCertificateChain`` written to a folder: one PEM file each.
public struct TestCertificateChainFiles: Sendable {
    public let directory: URL

    public var root: String { path("root.pem") }
    public var intermediate: String { path("intermediate.pem") }
    public var leaf: String { path("leaf.pem") }
    public var leafKey: String { path("leaf.key") }
    public var invalidOIDLeaf: String { path("invalid-oid-leaf.pem") }
    public var invalidOIDIntermediate: String { path("invalid-oid-intermediate.pem") }
    public var invalidIntermediateLeaf: String { path("invalid-intermediate-leaf.pem") }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    init(_ chain: TestCertificateChain, in directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (file, text) in [(root, chain.rootPEM), (intermediate, chain.intermediatePEM), (leaf, chain.leafPEM),
                             (leafKey, chain.leafKeyPEM), (invalidOIDLeaf, chain.invalidOIDLeafPEM),
                             (invalidOIDIntermediate, chain.invalidOIDIntermediatePEM),
                             (invalidIntermediateLeaf, chain.invalidIntermediateLeafPEM)] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
        }
    }
}
