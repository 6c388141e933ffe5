package step

// perlRunner is the runner (see runner) in one perl process, where the image
// has perl: it forks once, for the step, as the launch is prepared (the sh
// runner forks half a dozen times as the step starts), and it loads no module
// (POSIX alone costs 16 ms to start).
// It reads its environment from stdin first (see reaper). It makes itself
// the child subreaper (PR_SET_CHILD_SUBREAPER, 36), so a process of the step
// orphaned later comes to it, not to PID 1, where it knows prctl's syscall
// number: by the machine its own binary is built for (the ELF header's
// e_machine: x86_64, aarch64, riscv64), which an emulated image's is too. The
// step's process group is perl's own setpgrp, which needs no number. Its
// arguments: the step's command. What it keeps in the step's directory and
// prints as it ends is the sh runner's, so the state scripts read either:
// runner (pid and start time), progress (made by the step, if it reports
// any), pgid (the step's, written by the step before it checks for a Cancel),
// out (the output's last 4 KiB), exit (one write). What is not needed before
// the step starts (removing the ended steps its start supersedes) is done
// while it runs.
const perlRunner = `my @cmd = @ARGV;
# readenv reads the environment as dd.HoldRead does: export NAME='value'
# lines (a quote closed, escaped and reopened; a newline as "$_held_nl"),
# then ".". It answers it and its lines, or nothing when they end first or
# one is not of that form.
sub readenv {
	my $fh = shift;
	my (%env, $lines);
	while (1) {
		my $l = <$fh>;
		return unless defined $l && $l =~ s/\n\z//;
		$lines .= "$l\n";
		return (\%env, $lines . ".\n") if $l eq '.';
		my ($k, $q) = $l =~ /\Aexport ([A-Za-z_][A-Za-z0-9_]*)=(.*)\z/s or return;
		my $v = '';
		while (length $q) {
			if ($q =~ s/\A'([^']*)'//) { $v .= $1 }
			elsif ($q =~ s/\A\\'//) { $v .= "'" }
			elsif ($q =~ s/\A"\$_held_nl"//) { $v .= "\n" }
			else { return }
		}
		$env{$k} = $v;
	}
}
# Note: a my variable is seen from the next statement on.
my ($exe, $elf, $prctl);
open($exe, '<', '/proc/self/exe') && sysread($exe, $elf, 20) == 20 and
	$prctl = {62 => 157, 183 => 167, 243 => 167}->{unpack('v', substr($elf, 18, 2))};
syscall($prctl, 36, 1) if $prctl;
# none ends the runner, having run no step: the step's process ends first,
# reaped here (orphaned, it would go to PID 1, which postgres takes for a
# crashed backend); fail says why.
my ($pid, $go);
sub none { close $go if $go; waitpid($pid, 0) if $pid; exit $_[0] }
sub fail { syswrite STDERR, "step runner: $_[0]: $!\n"; none(1) }
# The step's process is forked now, while the launch is held, so that a
# fork's cost (a copy of this process, milliseconds on a busy host) is not
# on the step's path: it waits in its own group, its output on the pipe, for
# the environment (see go below), and ends, having run nothing, if none comes.
pipe(my $r, my $w) or fail('pipe');
pipe(my $gor, $go) or fail('pipe');
defined($pid = fork) or fail('fork');
unless ($pid) {
	close $go;
	setpgrp(0, 0);
	open STDIN, '<', '/dev/null';
	open STDOUT, '>&', $w;
	open STDERR, '>&', $w;
	my ($env) = readenv($gor) or exit 125;
	@ENV{keys %$env} = values %$env;
	my $D = $ENV{STEP_DIR};
	if (open(my $h, '>', "$D/pgid")) { syswrite $h, "$$\n"; close $h }
	exit 137 if -e "$D/cancelled";
	$ENV{STEP_PROGRESS} = "$D/progress";
	exec { $cmd[0] } @cmd;
	print STDERR "$cmd[0]: $!\n";
	exit 127;
}
close $w;
close $gor;
my ($env, $lines) = readenv(\*STDIN) or none(125);
@ENV{keys %$env} = values %$env;
open STDIN, '<', '/dev/null';
my $D = $ENV{STEP_DIR};
sub put { open(my $h, '>', "$D/$_[0]") or return; syswrite $h, $_[1]; close $h }
sub tail {
	open(my $h, '<', $_[0]) or return '';
	seek($h, -$_[1], 2) or seek($h, 0, 0);
	local $/;
	return scalar(<$h>) // '';
}
# The state functions of the sh runner (stateFuncs), for supersede.
sub alive {
	open(my $h, '<', "$_[0]/runner") or return 0;
	my ($pid, $start) = split ' ', (<$h> // '');
	open(my $s, '<', "/proc/" . ($pid // 0) . "/stat") or return 0;
	return defined $start && ((split / /, scalar <$s>)[21] // '') eq $start;
}
sub ended {
	my $d = shift;
	return 1 if -s "$d/exit";
	return 0 if alive($d);
	return 1 if -s "$d/runner";
	return time - ((stat $d)[9] // time) > 30;
}
sub cancel {
	my $d = shift;
	return if -s "$d/exit";
	if (open(my $c, '>', "$d/cancelled")) { close $c }
	return unless alive($d) && open(my $g, '<', "$d/pgid");
	kill 'KILL', -$1 if (<$g> // '') =~ /^([1-9]\d*)/;
}
# supersede cancels the steps of this one's ID still running, and answers
# those ended, for remove once the step runs: in this process, where the sh
# runner forks for it.
sub supersede {
	my ($up, $me) = $D =~ m{\A(.*)/(.*)-[^-]*\z} or return;
	opendir(my $dh, $up) or return;
	my @ended;
	for my $name (grep { /\A\Q$me\E-.{16}\z/s } readdir $dh) {
		my $d = "$up/$name";
		next if $d eq $D || !-d $d;
		if (ended($d)) { push @ended, $d } else { cancel($d) }
	}
	return @ended;
}
sub remove {
	for my $d (@_) {
		opendir(my $files, $d) or next;
		unlink map { "$d/$_" } grep { $_ ne '.' && $_ ne '..' } readdir $files;
		rmdir $d;
	}
}
unless (mkdir $D) { (my $up = $D) =~ s{/[^/]*\z}{}; mkdir $up; mkdir $D or none(86) }
open(my $stat, '<', "/proc/$$/stat") or fail("reading /proc/$$/stat");
put('runner', "$$ " . (split / /, scalar <$stat>)[21] . "\n");
my @ended = ($ENV{STEP_SUPERSEDE} // '') eq '1' ? supersede() : ();
# go: the step runs.
syswrite $go, $lines;
close $go;
remove(@ended);
# Read the output until its end, reaping the step as it ends (its SIGCHLD
# cuts the select short) and killing what it left in its group, whose
# holding the output would otherwise keep the end away.
$SIG{CHLD} = sub {};
my ($out, $rc, $eof) = ('');
until ($eof) {
	if (!defined $rc && waitpid($pid, 1) == $pid) {
		$rc = ($? & 127) ? 128 + ($? & 127) : $? >> 8;
		kill 'KILL', -$pid;
	}
	my $in = '';
	vec($in, fileno $r, 1) = 1;
	next if select($in, undef, undef, defined $rc ? undef : 0.1) <= 0;
	my $n = sysread $r, my $buf, 65536;
	if ($n) { $out = substr($out . $buf, -4096) } elsif (defined $n || $! != 4) { $eof = 1 }
}
if (!defined $rc && waitpid($pid, 0) == $pid) {
	$rc = ($? & 127) ? 128 + ($? & 127) : $? >> 8;
	kill 'KILL', -$pid;
}
$rc //= 127;
put('out', $out);
put('exit', "$rc\n");
my $say = "exit $rc\n";
$say .= "cancelled\n" if -e "$D/cancelled";
my $progress = tail("$D/progress", 512);
$say .= 'progress ' . unpack('H*', $progress) . "\nprogressed " . (stat "$D/progress")[9] . "\n" if length $progress;
$say .= 'out ' . unpack('H*', substr($out, -3073)) . "\n" if $rc || ($ENV{STEP_OUT} // '') eq '1';
syswrite STDOUT, $say;
$SIG{CHLD} = 'DEFAULT';
1 while waitpid(-1, 0) > 0;
exit 87;`
