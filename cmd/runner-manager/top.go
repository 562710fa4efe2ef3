package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runner-manager/runner-manager/internal/status"
)

// newTopCmd is `runner-manager top`: a live, read-only view of the status socket.
func newTopCmd() *cobra.Command {
	var f socketFlags
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Watch the running daemon live: targets, runners, queue latency, GitHub budget, events",
		Long: `top shows the running daemon's status socket as a live view, refreshed every --interval: per
target the demand, runners busy, idle and starting, and how long its latest jobs waited from queued
to in progress (p50/p95); the request governor's points used over the last minute against its
ceiling (this host's share in a fleet); the fleet role; the latest events. It only reads. It fits
any terminal from 40x10 up (80x24 over SSH) and follows resizes. Keys: q or Ctrl-C quits, r
refreshes now. Exit status 1 when stdin or stdout is not a terminal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in, ok := cmd.InOrStdin().(*os.File); !ok || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(os.Stdout.Fd())) {
				return withCode(exitFailure, errors.New("top needs a terminal on stdin and stdout (over SSH: ssh -t HOST runner-manager top); for a one-shot view run runner-manager status"))
			}
			if every < 100*time.Millisecond {
				return withCode(exitUsage, fmt.Errorf("--interval %s is too short: use 100ms or more", every))
			}
			m := topModel{socket: f.socketPath(cmd), every: every, now: time.Now}
			p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(cmd.Context()),
				tea.WithInput(cmd.InOrStdin()), tea.WithOutput(cmd.OutOrStdout()))
			ctx, cancel := context.WithCancel(cmd.Context())
			sized := make(chan struct{})
			go func() { defer close(sized); followSize(ctx, p, os.Stdout) }()
			_, err := p.Run()
			cancel()
			<-sized
			if err != nil {
				return withCode(exitFailure, fmt.Errorf("top: %w", err))
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().DurationVar(&every, "interval", 2*time.Second, "how often to ask the daemon")
	return cmd
}

// topModel is the bubbletea model: the latest snapshot (kept while the daemon does not answer),
// the last error, and the terminal's size.
type topModel struct {
	socket        string
	every         time.Duration
	now           func() time.Time
	snap          *status.Snapshot
	err           error
	width, height int
}

type snapMsg struct {
	snap status.Snapshot
	err  error
}

type tickMsg struct{}

func (m topModel) Init() tea.Cmd { return m.fetch }

// fetch asks the daemon once; a stuck daemon costs at most the refresh interval plus a second.
func (m topModel) fetch() tea.Msg {
	ctx, cancel := context.WithTimeout(context.Background(), m.every+time.Second)
	defer cancel()
	s, err := status.Fetch(ctx, m.socket)
	return snapMsg{snap: s, err: err}
}

func (m topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return m, tea.Quit
		case "r":
			return m, m.fetch
		}
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case snapMsg:
		m.err = msg.err
		if msg.err == nil {
			m.snap = &msg.snap
		}
		return m, tea.Tick(m.every, func(time.Time) tea.Msg { return tickMsg{} })
	case tickMsg:
		return m, m.fetch
	}
	return m, nil
}

func (m topModel) View() string {
	w, h := m.width, m.height
	if w == 0 || h == 0 {
		w, h = 80, 24 // before the first size report
	}
	if m.snap == nil {
		if m.err != nil {
			return fmt.Sprintf("runner-manager top: the daemon does not answer: %v\n(retrying every %s; q quits)", m.err, m.every)
		}
		return "runner-manager top: asking the daemon..."
	}
	frame := status.RenderTop(*m.snap, m.now(), w, h)
	if m.err != nil {
		// The last frame stays, its first line replaced: stale data is marked, never shown as live.
		_, rest, _ := strings.Cut(frame, "\n")
		frame = status.TruncateLine(fmt.Sprintf("NOT ANSWERING (%v); showing what it last said", m.err), w) + "\n" + rest
	}
	return frame
}

// followSize tells p the terminal's size at start and at every SIGWINCH until ctx ends (Windows
// has no such signal: there the size at start holds). The
// program's output is the redacting writer, not the terminal, so bubbletea cannot ask the
// terminal itself; tty is the terminal behind it (TestTopFollowsAJobAndResizes resizes it).
func followSize(ctx context.Context, p *tea.Program, tty *os.File) {
	fd := int(tty.Fd())
	if !term.IsTerminal(fd) {
		return
	}
	winch := make(chan os.Signal, 1)
	if len(resizeSignals) > 0 { // none on Windows: the size at start holds
		signal.Notify(winch, resizeSignals...)
		defer signal.Stop(winch)
	}
	for {
		if w, h, err := term.GetSize(fd); err == nil {
			p.Send(tea.WindowSizeMsg{Width: w, Height: h})
		}
		select {
		case <-ctx.Done():
			return
		case <-winch:
		}
	}
}
