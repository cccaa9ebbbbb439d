// libFuzzer entry point for HTTPParser. Built by fuzz/run-http-parser.sh together with the
// parser's source files (the parser is a pure type with no I/O).

/// What the parser recognised, in order, as comparable values; parsing stops at the first
/// error (recorded as `error`, whatever its kind: a split may find a different fault first).
private enum Event: Equatable {
    case head(method: String, target: String, minorVersion: Int, framing: HTTPRequestHead.BodyFraming,
              keepAlive: Bool, expectContinue: Bool)
    case end(body: [UInt8])
    case error
}

/// Feeds `input` in reads of `step` bytes (all at once when `step` covers it), keeping
/// unconsumed bytes like a connection does, and checks the parser's invariants.
private func run(_ input: [UInt8], step: Int) -> [Event] {
    var parser = HTTPParser(maxHeadBytes: 2048, maxBodyBytes: 4096)
    var pending: [UInt8] = []
    var offset = 0
    var events: [Event] = []
    var heads = 0
    var ends = 0
    while offset < input.count {
        let end = min(input.count, offset + step)
        pending += input[offset..<end]
        offset = end
        while true {
            let (consumed, result) = pending.withUnsafeBufferPointer { parser.parse($0) }
            precondition(consumed >= 0 && consumed <= pending.count, "consumed out of range")
            pending.removeFirst(consumed)
            switch result {
            case .needMore:
                break
            case .head(let head):
                heads += 1
                precondition(head.headLength <= 2048)
                events.append(.head(method: head.method, target: head.target, minorVersion: head.minorVersion,
                                    framing: head.framing, keepAlive: head.keepAlive,
                                    expectContinue: head.expectContinue))
                continue
            case .end(let body):
                ends += 1
                precondition(body.count <= 4096)
                precondition(ends == heads, "end without head")
                events.append(.end(body: body))
                continue
            case .error:
                events.append(.error)
                return events
            }
            break
        }
    }
    return events
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The first byte picks how the rest is cut into reads, so boundaries get explored too;
    // every cut must give what the whole input in one read gives.
    let step = Int(bytes[0]) + 1
    let input = Array(bytes.dropFirst())
    let split = run(input, step: step)
    precondition(split == run(input, step: max(1, input.count)), "parsing depends on read boundaries")
    return 0
}
