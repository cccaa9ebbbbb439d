import Foundation

/// Request bodies of the child-device and request routes (API.md "Child devices and requests").
private struct PairBody: Encodable { var deviceName: String? }
private struct NewRequestBody: Encodable {
    var id: String
    var kind: String
    var amountCents: Int64
    var note: String
}

extension APIClient {
    /// `POST /v1/households/{id}/children/{childId}/devices`: a code that pairs a device to the child.
    func pairChildDevice(householdId: String, childId: String, deviceName: String?) throws(APIError) -> Wire.LinkCode {
        try json("POST", "/v1/households/\(householdId)/children/\(childId)/devices", Wire.LinkCode.self,
                 body: PairBody(deviceName: deviceName)).body
    }

    /// `GET /v1/households/{id}/children/{childId}/devices`.
    func childDevices(householdId: String, childId: String) throws(APIError) -> [Wire.ChildDevice] {
        try everyPage("/v1/households/\(householdId)/children/\(childId)/devices", of: Wire.ChildDevice.self)
    }

    /// `DELETE /v1/households/{id}/children/{childId}/devices/{tokenId}`.
    func revokeChildDevice(householdId: String, childId: String, tokenId: String) throws(APIError) {
        _ = try call("DELETE", "/v1/households/\(householdId)/children/\(childId)/devices/\(APIClient.escape(tokenId))")
    }

    /// `GET /v1/households/{id}/children/{childId}/changes`: the household feed filtered to one
    /// child (a child device's feed).
    func childChanges(householdId: String, childId: String, since: String?, limit: Int = 500,
                      wait: Int = 0) throws(APIError) -> Wire.ChangesPage {
        var path = "/v1/households/\(householdId)/children/\(childId)/changes?limit=\(limit)"
        if let since { path += "&since=\(APIClient.escape(since))" }
        if wait > 0 { path += "&wait=\(wait)" }
        return try FeedPageDecoder.decode(call("GET", path, timeout: timeout + Double(wait)).body)
    }

    /// `POST /v1/households/{id}/children/{childId}/requests` with the device's id for the
    /// request (a retry of a lost answer makes no second request).
    func createRequest(householdId: String, _ r: Wire.Request) throws(APIError) -> Wire.Request {
        try json("POST", "/v1/households/\(householdId)/children/\(r.childId)/requests", Wire.Request.self,
                 body: NewRequestBody(id: r.id, kind: r.kind, amountCents: r.amountCents, note: r.note ?? "")).body
    }
}
