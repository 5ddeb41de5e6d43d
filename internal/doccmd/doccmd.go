// Package doccmd reads the shell commands of the project's documentation
// (the fenced sh, bash and shell blocks of README.md and docs/*.md), so
// that tests can run exactly what the documentation tells a reader to run,
// and so that a test can check that every documented command is run by a
// make target or a test.
package doccmd

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Block is one fenced shell block of a document.
type Block struct {
	File string // relative to the repository root, e.g. "docs/live.md"
	Line int    // line of the opening fence, 1-based
	Text string // the block's lines, without the fences
}

// Command is one command of a Block: a line of the block (with the lines
// it continues with a trailing backslash), its comment removed.
type Command struct {
	File  string
	Block int    // the line of its block's opening fence
	Line  int    // its first line, 1-based
	Text  string // continuation lines joined by a space, whitespace collapsed
}

// String returns "FILE:LINE: TEXT".
func (c Command) String() string { return fmt.Sprintf("%s:%d: %s", c.File, c.Line, c.Text) }

// shellLangs are the info strings of fenced blocks that hold commands.
var shellLangs = []string{"sh", "bash", "shell"}

// Root returns the repository root: the nearest directory at or above the
// working directory that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("doccmd: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("doccmd: no go.mod at or above the working directory")
		}
		dir = up
	}
}

// Docs returns the documents whose commands count: README.md and every
// docs/*.md, relative to root, in a fixed order.
func Docs(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, fmt.Errorf("doccmd: %w", err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, fmt.Errorf("doccmd: %w", err)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	slices.Sort(out[1:])
	return out, nil
}

// Blocks returns the shell blocks of the documents under root.
func Blocks(root string) ([]Block, error) {
	docs, err := Docs(root)
	if err != nil {
		return nil, err
	}
	var out []Block
	for _, d := range docs {
		b, err := os.ReadFile(filepath.Join(root, d))
		if err != nil {
			return nil, fmt.Errorf("doccmd: %w", err)
		}
		bs, err := parseBlocks(d, string(b))
		if err != nil {
			return nil, err
		}
		out = append(out, bs...)
	}
	return out, nil
}

func parseBlocks(file, text string) ([]Block, error) {
	var out []Block
	var cur *Block
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		t := strings.TrimSpace(l)
		switch {
		case fence == "" && strings.HasPrefix(t, "```"):
			fence = "```"
			if slices.Contains(shellLangs, strings.TrimSpace(strings.TrimPrefix(t, "```"))) {
				cur, lines = &Block{File: file, Line: n}, nil
			}
		case fence != "" && t == fence:
			fence = ""
			if cur != nil {
				cur.Text = strings.Join(lines, "\n")
				out = append(out, *cur)
				cur = nil
			}
		case cur != nil:
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("doccmd: %s: %w", file, err)
	}
	if fence != "" {
		return nil, fmt.Errorf("doccmd: %s: a fenced block is not closed", file)
	}
	return out, nil
}

// Commands returns the commands of the blocks, in order.
func Commands(blocks []Block) []Command {
	var out []Command
	for _, b := range blocks {
		var acc []string
		first := 0
		for i, l := range strings.Split(b.Text, "\n") {
			n := b.Line + 1 + i
			if len(acc) == 0 {
				first = n
			}
			l = StripComment(l)
			cont := strings.HasSuffix(strings.TrimRight(l, " \t"), `\`)
			if cont {
				l = strings.TrimSuffix(strings.TrimRight(l, " \t"), `\`)
			}
			if strings.TrimSpace(l) != "" {
				acc = append(acc, l)
			}
			if cont {
				continue
			}
			if len(acc) > 0 {
				out = append(out, Command{File: b.File, Block: b.Line, Line: first, Text: strings.Join(strings.Fields(strings.Join(acc, " ")), " ")})
			}
			acc = nil
		}
		if len(acc) > 0 {
			out = append(out, Command{File: b.File, Block: b.Line, Line: first, Text: strings.Join(strings.Fields(strings.Join(acc, " ")), " ")})
		}
	}
	return out
}

// StripComment removes a shell comment from line: a # that starts a word
// outside quotes, and everything after it.
func StripComment(line string) string {
	var quote rune
	prev := ' '
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t'):
			return strings.TrimRight(line[:i], " \t")
		}
		prev = r
	}
	return line
}

// Fields splits a simple command into its words as the shell would, for
// commands without expansions: single and double quotes group, a
// backslash escapes the next character outside single quotes. Anything it
// does not handle ($, backquotes, globs, ;, &, |, a redirection other than
// a final "> FILE") is an error, so a test never runs something other than
// what is written. The redirection, if any, is returned as out.
func Fields(cmd string) (words []string, out string, err error) {
	var cur strings.Builder
	inWord := false
	var quote rune
	esc := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for _, r := range cmd {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				esc = true
			case '$', '`':
				return nil, "", fmt.Errorf("doccmd: %q: expansions are not handled", cmd)
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\':
			esc, inWord = true, true
		case r == ' ' || r == '\t':
			flush()
		case strings.ContainsRune("$`;&|<*?(){}", r):
			return nil, "", fmt.Errorf("doccmd: %q: %q is not handled", cmd, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || esc {
		return nil, "", fmt.Errorf("doccmd: %q: unterminated quote or escape", cmd)
	}
	flush()
	for i, w := range words {
		if w == ">" {
			if i != len(words)-2 {
				return nil, "", fmt.Errorf("doccmd: %q: only a final \"> FILE\" redirection is handled", cmd)
			}
			return words[:i], words[i+1], nil
		}
		if strings.HasPrefix(w, ">") {
			return nil, "", fmt.Errorf("doccmd: %q: write the redirection as \"> FILE\"", cmd)
		}
	}
	return words, "", nil
}

// Find returns the commands whose text starts with prefix, failing if
// there are none (a test that runs documented commands must run some).
func Find(cmds []Command, prefix string) ([]Command, error) {
	var out []Command
	for _, c := range cmds {
		if strings.HasPrefix(c.Text, prefix) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("doccmd: no documented command starts with %q", prefix)
	}
	return out, nil
}

// Load returns the commands of the documents of the repository that holds
// the working directory.
func Load() (root string, cmds []Command, err error) {
	root, err = Root()
	if err != nil {
		return "", nil, err
	}
	blocks, err := Blocks(root)
	if err != nil {
		return "", nil, err
	}
	return root, Commands(blocks), nil
}
