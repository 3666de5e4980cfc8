import HeraldCore

/// Job-level checks of one template (the default or a locale variant) against Apple's rules.
/// Runs once per job; literal values are checked here, placeholder values at render time.
struct TemplateValidator {
    /// `push.template` or `push.locales.<locale>`: the start of every message.
    let source: String
    let pushType: PushType

    func validate(_ template: JSONValue) throws(PayloadTemplateError) {
        guard case .object = template, case .object(let apsMembers)? = template["aps"] else {
            throw .missingAPS(source: source)
        }
        try checkDuplicates(template, path: "")
        for member in apsMembers {
            guard let shape = APSRules.shape(in: APSRules.aps, for: member.key) else {
                throw .unknownKey(source: source, path: "aps.\(member.key)", allowed: APSRules.aps.map(\.key))
            }
            try check(member.value, is: shape, path: "aps.\(member.key)")
        }
        if pushType == .background { try checkBackground(apsMembers) }
    }

    /// Apple: "The payload's aps dictionary must include the content-available key with a value
    /// of 1" and "must not include the alert, badge, or sound keys" (APNS.md §4.5).
    private func checkBackground(_ aps: [JSONValue.Member]) throws(PayloadTemplateError) {
        if let bad = aps.first(where: { APSRules.forbiddenInBackground.contains($0.key) }) {
            throw .backgroundPush(source: source, problem: "must not include aps.alert, aps.badge or aps.sound (found aps.\(bad.key))")
        }
        guard aps.contains(where: { $0.key == "content-available" }) else {
            throw .backgroundPush(source: source, problem: "needs aps.content-available: 1")
        }
    }

    private func check(_ value: JSONValue, is shape: Shape, path: String) throws(PayloadTemplateError) {
        let wrong = PayloadTemplateError.wrongValue(source: source, path: path, expected: shape.expected)
        switch shape {
        case .orNull(let inner):
            if value == .null { return }
            do throws(PayloadTemplateError) { try check(value, is: inner, path: path) } catch {
                if case .wrongValue = error { throw wrong }
                throw error
            }
        case .string:
            guard case .string(let s) = value, try typed(s, path) == nil else { throw wrong }
        case .oneOf(let allowed):
            guard case .string(let s) = value, allowed.contains(s) else { throw wrong }
        case .one, .flag:
            guard case .number(let n) = value, n == "1" || (n == "0" && shapeIsFlag(shape)) else { throw wrong }
        case .nonNegativeInteger, .integer:
            switch value {
            case .number(let n):
                guard let i = Int(n), i >= 0 || !shapeIsNonNegative(shape) else { throw wrong }
            case .string(let s):
                guard try typed(s, path) == .int else { throw wrong }
            default: throw wrong
            }
        case .number(let range):
            switch value {
            case .number(let n):
                guard let d = Double(n) else { throw wrong }
                if let range, !range.contains(d) { throw wrong }
            case .string(let s):
                guard let t = try typed(s, path), t == .number || t == .int else { throw wrong }
            default: throw wrong
            }
        case .object:
            guard case .object = value else { throw wrong }
        case .stringArray:
            guard case .array(let items) = value else { throw wrong }
            for (i, item) in items.enumerated() { try check(item, is: .string, path: "\(path)[\(i)]") }
        case .alert:
            try checkDictionaryOrString(value, table: APSRules.alert, path: path, wrong: wrong)
        case .sound:
            try checkDictionaryOrString(value, table: APSRules.sound, path: path, wrong: wrong)
        }
    }

    private func checkDictionaryOrString(_ value: JSONValue, table: [(key: String, shape: Shape)], path: String,
                                         wrong: PayloadTemplateError) throws(PayloadTemplateError) {
        switch value {
        case .string: try check(value, is: .string, path: path)
        case .object(let members):
            for member in members {
                guard let shape = APSRules.shape(in: table, for: member.key) else {
                    throw .unknownKey(source: source, path: "\(path).\(member.key)", allowed: table.map(\.key))
                }
                try check(member.value, is: shape, path: "\(path).\(member.key)")
            }
        default: throw wrong
        }
    }

    /// The type of a whole-value typed placeholder, nil for plain text; placeholder syntax
    /// errors surface here with the path.
    private func typed(_ s: String, _ path: String) throws(PayloadTemplateError) -> ValueType? {
        do throws(PlaceholderProblem) {
            return PlaceholderSyntax.wholeTyped(try PlaceholderSyntax.parse(s))?.type
        } catch {
            throw TemplateCompiler.error(error, source: source, path: path)
        }
    }

    /// Duplicate keys anywhere: JSON allows them, APNs' parser would keep one of them silently.
    private func checkDuplicates(_ value: JSONValue, path: String) throws(PayloadTemplateError) {
        switch value {
        case .object(let members):
            var seen = Set<String>()
            for m in members {
                let childPath = path.isEmpty ? m.key : "\(path).\(m.key)"
                guard seen.insert(m.key).inserted else { throw .duplicateKey(source: source, path: childPath) }
                try checkDuplicates(m.value, path: childPath)
            }
        case .array(let items):
            for (i, item) in items.enumerated() { try checkDuplicates(item, path: "\(path)[\(i)]") }
        default: return
        }
    }

    private func shapeIsFlag(_ shape: Shape) -> Bool { if case .flag = shape { return true } else { return false } }
    private func shapeIsNonNegative(_ shape: Shape) -> Bool {
        if case .nonNegativeInteger = shape { return true } else { return false }
    }
}
