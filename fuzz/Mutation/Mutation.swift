// What the structure-aware fuzz targets (fuzz/JWS, fuzz/IDToken) share: libFuzzer's own
// mutator, a scratch-buffer mutation of decoded bytes, a seeded generator, and the hand-back
// of a mutated input. Each run script compiles this file into its target's module.

@_silgen_name("LLVMFuzzerMutate")
func LLVMFuzzerMutate(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int) -> Int

/// Mutates `bytes` with libFuzzer's mutator in a scratch buffer with room to grow.
func mutate(_ bytes: [UInt8]) -> [UInt8] {
    var buffer = bytes + [UInt8](repeating: 0, count: bytes.count / 2 + 16)
    let length = buffer.withUnsafeMutableBufferPointer { LLVMFuzzerMutate($0.baseAddress!, bytes.count, $0.count) }
    return Array(buffer.prefix(length))
}

/// Writes `output` over libFuzzer's input buffer when it fits in `maxSize`; its length, or
/// nil when it does not fit.
func handBack(_ output: [UInt8], into data: UnsafeMutablePointer<UInt8>, maxSize: Int) -> Int? {
    guard output.count <= maxSize else { return nil }
    output.withUnsafeBufferPointer { data.update(from: $0.baseAddress!, count: output.count) }
    return output.count
}

/// A tiny deterministic generator seeded by libFuzzer.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
