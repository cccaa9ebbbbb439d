import LedgerModel
import XCTest

/// The reconciliation hash is a wire contract (openapi.yaml, `POST …/reconcile`): device and
/// server must compute the same values. Vectors computed independently from the description.
final class ReconcileDigestTests: XCTestCase {
    func testHashesMatchTheDescribedFunction() {
        XCTAssertEqual(ReconcileDigest.hash("3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44"), 0x4a04_0c76_8547_ad34)
        XCTAssertEqual(ReconcileDigest.hash("3F0A9DB7-21C5-4F2A-9B1E-0C7D3A1E2B44"), 0x4a04_0c76_8547_ad34, "ids compare lowercase")
        XCTAssertEqual(ReconcileDigest.hash("00000000-0000-0000-0000-000000000000"), 0x245a_85b4_a08c_0288)
        XCTAssertEqual(ReconcileDigest.bucket(0x4a04_0c76_8547_ad34), 74)
    }

    func testSummariesIgnoreOrderAndRoundTripTheirDigest() {
        var a = ReconcileDigest.ChildSummary(), b = ReconcileDigest.ChildSummary()
        let ids = ["3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44", "00000000-0000-0000-0000-000000000000"]
        for id in ids { a.add(id: id) }
        for id in ids.reversed() { b.add(id: id) }
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.whole.digest, "6e5e922b25d3afbc")
        XCTAssertEqual(a.whole.count, 2)
        XCTAssertEqual(a.buckets[74].count, 1)
        XCTAssertEqual(a.buckets[36].count, 1)
        XCTAssertEqual(ReconcileDigest.Summary(count: 2, digest: a.whole.digest), a.whole)
        XCTAssertNil(ReconcileDigest.Summary(count: 2, digest: "xyz"))
        XCTAssertNil(ReconcileDigest.Summary(count: -1, digest: a.whole.digest))
        var c = a
        c.add(id: "11111111-1111-1111-1111-111111111111")
        XCTAssertNotEqual(c.whole, a.whole)
    }
}
