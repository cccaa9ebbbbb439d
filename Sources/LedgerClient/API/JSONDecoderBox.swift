import Foundation

/// JSON decoding of stored text.
enum JSONDecoderBox {
    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}
