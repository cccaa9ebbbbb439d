// libFuzzer entry point for HTTPParser. Built by fuzz/run-http-parser.sh together with the
// parser's source files (the parser is a pure type with no I/O).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The first byte picks how the rest is cut into reads, so boundaries get explored too.
    let step = Int(bytes[0]) + 1
    let input = Array(bytes.dropFirst())
    var parser = HTTPParser(maxHeadBytes: 2048, maxBodyBytes: 4096)
    var pending: [UInt8] = []
    var offset = 0
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
                continue
            case .end(let body):
                ends += 1
                precondition(body.count <= 4096)
                precondition(ends == heads, "end without head")
                continue
            case .error:
                return 0
            }
            break
        }
    }
    return 0
}
