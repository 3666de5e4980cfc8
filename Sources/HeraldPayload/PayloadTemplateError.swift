public import HeraldCore

/// A job-level problem with `push.template` or one of `push.locales`. Found once, when the job
/// is loaded, so the operator fixes the template before a single push is sent (exit 2).
///
/// Every message starts with where the problem is (`push.template`, `push.locales.fr`) and
/// names the JSON path inside the template (`aps.alert.body`, `aps.alert.loc-args[1]`).
public indirect enum PayloadTemplateError: Error, Equatable, CustomStringConvertible {
    /// The template is not a JSON object with an `aps` object.
    case missingAPS(source: String)
    /// A key inside `aps` (or `aps.alert`, `aps.sound`) that Apple does not document.
    case unknownKey(source: String, path: String, allowed: [String])
    /// The same key twice in one object (a custom key could otherwise shadow `aps`).
    case duplicateKey(source: String, path: String)
    /// A value of the wrong type or range; `expected` completes "… must be".
    case wrongValue(source: String, path: String, expected: String)
    /// `{{` without a matching `}}`.
    case unterminatedPlaceholder(source: String, path: String)
    /// A placeholder that cannot be used (empty name, unknown type, typed inside longer text…).
    case badPlaceholder(source: String, path: String, problem: String)
    /// A background push breaks Apple's rules for silent notifications.
    case backgroundPush(source: String, problem: String)
    /// Background pushes must go out with priority 5 ("10 is an error").
    case backgroundPriority(Int)
    /// `aps` holds `content-available: 1` and no alert, badge or sound, but `push.type` is alert.
    case silentAsAlert(source: String)
    /// An alert push whose `aps` has no alert, badge or sound: the device would show nothing.
    case alertShowsNothing(source: String)
    /// Live Activity keys outside a liveactivity push, or a liveactivity push missing one.
    case liveActivity(source: String, problem: String)
    /// A header setting that cannot be sent: `key` is the job key (`push.priority`,
    /// `push.collapse_id`, `push.expiration`, `apns.topic`), `problem` completes the sentence.
    case header(key: String, problem: String)
    /// The template is already over the size limit before any field is filled in.
    case templateTooLarge(source: String, bytes: Int, limit: Int)
    /// The same locale (after normalizing case and `_`) appears twice in `push.locales`.
    case duplicateLocale(String)
    /// A problem with the file and line where the job wrote the value (`TemplateLines`).
    case located(file: String, line: Int, PayloadTemplateError)

    /// This problem with the file and line of its template value, when the job recorded them.
    public func placed(by lines: TemplateLines) -> PayloadTemplateError {
        guard let source, let at = lines.locate(source: source, path: path) else { return self }
        return .located(file: at.file, line: at.line, self)
    }

    /// `push.template` or `push.locales.<locale>`, for the problems inside one template.
    var source: String? {
        switch self {
        case .missingAPS(let s), .unknownKey(let s, _, _), .duplicateKey(let s, _), .wrongValue(let s, _, _),
             .unterminatedPlaceholder(let s, _), .badPlaceholder(let s, _, _), .backgroundPush(let s, _), .silentAsAlert(let s),
             .alertShowsNothing(let s), .templateTooLarge(let s, _, _):
            return s
        case .liveActivity(let s, _): return s
        case .backgroundPriority, .header, .duplicateLocale, .located: return nil
        }
    }

    /// The JSON path inside the template, where the problem has one (`aps` for the rules about
    /// the `aps` dictionary as a whole).
    var path: String? {
        switch self {
        case .unknownKey(_, let p, _), .duplicateKey(_, let p), .wrongValue(_, let p, _), .unterminatedPlaceholder(_, let p),
             .badPlaceholder(_, let p, _):
            return p
        case .backgroundPush, .silentAsAlert, .alertShowsNothing, .liveActivity: return "aps"
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .missingAPS(let source):
            return "\(source): top level must be an object with an \"aps\" dictionary"
        case .unknownKey(let source, let path, let allowed):
            return "\(source): unknown key \(path); allowed here: \(allowed.joined(separator: ", "))"
        case .duplicateKey(let source, let path):
            return "\(source): duplicate key \(path)"
        case .wrongValue(let source, let path, let expected):
            return "\(source): \(path) must be \(expected)"
        case .unterminatedPlaceholder(let source, let path):
            return "\(source): unterminated placeholder in \(path)"
        case .badPlaceholder(let source, let path, let problem):
            return "\(source): \(path): \(problem)"
        case .backgroundPush(let source, let problem):
            return "\(source): a background push \(problem)"
        case .backgroundPriority(let priority):
            return "push.priority: a background push must have priority 5, not \(priority)"
        case .silentAsAlert(let source):
            return "\(source): aps has content-available: 1 and no alert, badge or sound, which is a background (silent) push: "
                + "set push.type: background (priority 5), or add an alert"
        case .alertShowsNothing(let source):
            return "\(source): an alert push needs aps.alert, aps.badge or aps.sound; to send data only, "
                + "use push.type: background with aps.content-available: 1"
        case .liveActivity(let source, let problem):
            return "\(source): \(problem)"
        case .header(let key, let problem):
            return "\(key) \(problem)"
        case .templateTooLarge(let source, let bytes, let limit):
            return "\(source): the template is \(bytes) bytes before any field is filled in; the limit is \(limit)"
        case .duplicateLocale(let locale):
            return "push.locales: locale \(locale) appears more than once"
        case .located(let file, let line, let problem):
            return "\(file) line \(line): \(problem)"
        }
    }
}
