import Foundation
import StoreKitJWS
import XCTest

final class TrustedRootTests: XCTestCase {
    private var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("storekitjws-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    func testLoadsDERAndShippedCopyMatchesVector() throws {
        let vector = try AppStoreVectors.appleRoot()
        let shipped = try TrustedRoot.appleRootCAG3(
            resourcesDirectory: AppStoreVectors.repositoryRoot.appendingPathComponent("Resources").path)
        XCTAssertEqual(vector, shipped)
        XCTAssertEqual(shipped.sha256Fingerprint, "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
    }

    func testLoadsPEMAndDetectsFormat() throws {
        let pemFile = scratch.appendingPathComponent("ca.pem")
        try Data(AppStoreVectors.chain().rootPEM.utf8).write(to: pemFile)
        let pem = try TrustedRoot.load(path: pemFile.path)
        let derFile = scratch.appendingPathComponent("ca.der")
        try Data(pem.der).write(to: derFile)
        XCTAssertEqual(try TrustedRoot.load(path: derFile.path), pem)
        XCTAssertEqual(try TrustedRoot(der: pem.der), pem)
    }

    func testPEMBundles() throws {
        let bundle = try AppStoreVectors.chain().rootPEM + "\n" + AppStoreVectors.chain().intermediatePEM
        let file = scratch.appendingPathComponent("bundle.pem")
        try bundle.write(to: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(try TrustedRoot.loadAll(path: file.path).count, 2)
        XCTAssertThrowsError(try TrustedRoot.load(path: file.path))
    }

    func testRejectsGarbage() throws {
        let garbage = scratch.appendingPathComponent("garbage")
        try Data("hello".utf8).write(to: garbage)
        XCTAssertThrowsError(try TrustedRoot.load(path: garbage.path))
        let badPEM = scratch.appendingPathComponent("bad.pem")
        try Data("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8).write(to: badPEM)
        XCTAssertThrowsError(try TrustedRoot.load(path: badPEM.path))
        XCTAssertThrowsError(try TrustedRoot.load(path: scratch.appendingPathComponent("missing").path))
        XCTAssertThrowsError(try TrustedRoot(der: []))
        let der = try AppStoreVectors.bytes("AppleRootCA-G3.der")
        XCTAssertThrowsError(try TrustedRoot(der: der + [0]))
        XCTAssertThrowsError(try TrustedRoot(der: Array(der.dropLast())))
    }
}
