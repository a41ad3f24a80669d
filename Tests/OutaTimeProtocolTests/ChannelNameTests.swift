import Testing
import OutaTimeProtocol

@Suite("ChannelName")
struct ChannelNameTests {
    @Test("valid names parse into kind and name", arguments: [
        ("delorean/main", ChannelKind.delorean, "main"),
        ("starport/Bay-7", .starport, "Bay-7"),
        ("timers/race.day_2-b", .timers, "race.day_2-b"),
        ("laps/" + String(repeating: "x", count: 64), .laps, String(repeating: "x", count: 64)),
        ("laps/.", .laps, "."),
        ("laps/_", .laps, "_"),
        ("laps/-", .laps, "-"),
        ("delorean/0", .delorean, "0"),
    ])
    func valid(text: String, kind: ChannelKind, name: String) throws {
        let channel = try ChannelName.parse(text)
        #expect(channel.kind == kind)
        #expect(channel.name == name)
        #expect(channel.description == text)
        #expect(channel == ChannelName(kind: kind, name: name))
    }

    @Test("malformed names are invalid_channel", arguments: [
        "delorean",
        "",
        "delorean/",
        "delorean/" + String(repeating: "x", count: 65),
        "delorean/a b",
        "delorean/a/b",
        "delorean//",
        "delorean/é",
        "delorean/main\n",
        "delorean/\u{301}main",  // a combining mark right after the slash
        "foo/a b",  // the name is checked before the kind
    ])
    func invalid(text: String) {
        #expect {
            try ChannelName.parse(text)
        } throws: { error in
            guard let error = error as? ProtocolError else { return false }
            return error.code == .invalidChannel && error.message.contains("1–64")
        }
    }

    @Test("the invalid_channel message names the value")
    func invalidMessageNamesValue() {
        #expect(throws: ProtocolError(
            .invalidChannel,
            "channel 'delorean/a b' has an invalid name 'a b': a name is 1–64 characters from A–Z a–z 0–9 . _ -"
        )) {
            try ChannelName.parse("delorean/a b")
        }
        #expect {
            try ChannelName.parse("nokind")
        } throws: { error in
            (error as? ProtocolError)?.message.contains("'nokind'") == true
        }
    }

    @Test("unknown kinds are unknown_kind, listing the kinds", arguments: ["foo/bar", "Delorean/x", "/x", "lap/x", "lapss/x", "lâps/x", "time\u{301}rs/x"])
    func unknownKind(text: String) {
        #expect {
            try ChannelName.parse(text)
        } throws: { error in
            guard let error = error as? ProtocolError else { return false }
            let kind = String(text.prefix { $0 != "/" })
            return error.code == .unknownKind
                && error.message.contains("'\(kind)'")
                && error.message.contains(ChannelKind.allowedList)
        }
    }

    @Test("a huge value is shortened in the message")
    func hugeValueShortened() {
        let text = String(repeating: "a", count: 10_000)
        #expect {
            try ChannelName.parse(text)
        } throws: { error in
            guard let message = (error as? ProtocolError)?.message else { return false }
            return message.count < 300 && message.contains("10000 characters")
        }
    }

    @Test("equality, hashing and ordering follow the text form")
    func equalityAndOrder() throws {
        let parsed = try ChannelName.parse("timers/b")
        let built = ChannelName(kind: .timers, name: "b")
        #expect(parsed == built)
        #expect(Set([parsed, built]).count == 1)

        let names = try ["timers/b", "delorean/z", "laps/a", "delorean/a"].map(ChannelName.parse)
        #expect(names.sorted().map(\.description) == ["delorean/a", "delorean/z", "laps/a", "timers/b"])
    }

    @Test("isValidName follows the rule", arguments: [
        ("a", true), ("A.b_c-9", true), (String(repeating: "n", count: 64), true),
        ("", false), (String(repeating: "n", count: 65), false), ("a/b", false), ("a b", false), ("ü", false),
    ])
    func isValidName(name: String, valid: Bool) {
        #expect(ChannelName.isValidName(name) == valid)
    }
}
