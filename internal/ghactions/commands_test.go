package ghactions

import "testing"

func TestEscapeWorkflowCommand(t *testing.T) {
	if got := escapeData("100% done\r\nnext"); got != "100%25 done%0D%0Anext" {
		t.Errorf("escapeData = %q", got)
	}
	if got := escapeProperty("a:b,c%\n"); got != "a%3Ab%2Cc%25%0A" {
		t.Errorf("escapeProperty = %q", got)
	}
	if got := StopCommands("tok", "::error::x\n"); got != "::stop-commands::tok\n::error::x\n::tok::\n" {
		t.Errorf("StopCommands = %q", got)
	}
	if got := StopCommands("", "text\n"); got != "text\n" {
		t.Errorf("StopCommands without token = %q", got)
	}
}

func TestError(t *testing.T) {
	if got := Error("pod a: b, c", "line 1\nline 2"); got != "::error title=pod a%3A b%2C c::line 1%0Aline 2\n" {
		t.Errorf("Error = %q", got)
	}
}
