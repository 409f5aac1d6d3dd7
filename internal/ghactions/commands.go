package ghactions

import (
	"strings"
)

// StopCommands wraps text from the cluster: between
// ::stop-commands::TOKEN and ::TOKEN:: the runner runs no workflow
// command, so a log line such as ::add-mask:: or ::error:: is only text.
// The token must be random per run, so the text cannot end the pause.
func StopCommands(token, text string) string {
	if token == "" || text == "" {
		return text
	}
	return StopLine(token) + text + ResumeLine(token)
}

// StopLine is the line that pauses workflow commands until
// ResumeLine(token).
func StopLine(token string) string { return "::stop-commands::" + token + "\n" }

// ResumeLine is the line that ends the pause StopLine(token) began.
func ResumeLine(token string) string { return "::" + token + "::\n" }

// Error is one ::error workflow command, on a line of its own: an
// annotation titled title with message as its body. Both are escaped as
// GitHub documents it for properties and data, so neither can end the
// command or start another one; they must be defused or escaped for
// people already.
func Error(title, message string) string {
	return "::error title=" + escapeProperty(title) + "::" + escapeData(message) + "\n"
}

// escapeData escapes the message of a workflow command.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a property value of a workflow command.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
