// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of cs_parse_tcp_counters() (daemon/source/procfs.c), the pure parser of
 * /proc/PID/net/netstat. Every input is copied, with its NUL, to the very end
 * of a mapping followed by a PROT_NONE page: reading past the text crashes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "procfs.h"

/* /proc/net/netstat of a Linux 6.x machine, as read. */
static const char real_netstat[] =
	"TcpExt: SyncookiesSent SyncookiesRecv SyncookiesFailed EmbryonicRsts PruneCalled "
	"RcvPruned OfoPruned OutOfWindowIcmps LockDroppedIcmps ArpFilter TW TWRecycled "
	"TWKilled PAWSActive PAWSEstab BeyondWindow TSEcrRejected PAWSOldAck PAWSTimewait "
	"DelayedACKs DelayedACKLocked DelayedACKLost ListenOverflows ListenDrops "
	"TCPHPHits TCPPureAcks TCPHPAcks TCPRenoRecovery TCPSackRecovery TCPSACKReneging "
	"TCPSACKReorder TCPRenoReorder TCPTSReorder TCPFullUndo TCPPartialUndo "
	"TCPDSACKUndo TCPLossUndo TCPLostRetransmit TCPRenoFailures TCPSackFailures "
	"TCPLossFailures TCPFastRetrans TCPSlowStartRetrans TCPTimeouts TCPLossProbes "
	"TCPLossProbeRecovery TCPRenoRecoveryFail TCPSackRecoveryFail TCPRcvCollapsed "
	"TCPBacklogCoalesce TCPDSACKOldSent TCPDSACKOfoSent TCPDSACKRecv TCPDSACKOfoRecv "
	"TCPAbortOnData TCPAbortOnClose TCPAbortOnMemory TCPAbortOnTimeout "
	"TCPAbortOnLinger TCPAbortFailed TCPMemoryPressures TCPMemoryPressuresChrono "
	"TCPSACKDiscard TCPDSACKIgnoredOld TCPDSACKIgnoredNoUndo TCPSpuriousRTOs "
	"TCPMD5NotFound TCPMD5Unexpected TCPMD5Failure TCPSackShifted TCPSackMerged "
	"TCPSackShiftFallback TCPBacklogDrop PFMemallocDrop TCPMinTTLDrop "
	"TCPDeferAcceptDrop IPReversePathFilter TCPTimeWaitOverflow TCPReqQFullDoCookies "
	"TCPReqQFullDrop TCPRetransFail TCPRcvCoalesce TCPOFOQueue TCPOFODrop TCPOFOMerge "
	"TCPChallengeACK TCPSYNChallenge TCPFastOpenActive TCPFastOpenActiveFail "
	"TCPFastOpenPassive TCPFastOpenPassiveFail TCPFastOpenListenOverflow "
	"TCPFastOpenCookieReqd TCPFastOpenBlackhole TCPSpuriousRtxHostQueues "
	"BusyPollRxPackets TCPAutoCorking TCPFromZeroWindowAdv TCPToZeroWindowAdv "
	"TCPWantZeroWindowAdv TCPSynRetrans TCPOrigDataSent TCPHystartTrainDetect "
	"TCPHystartTrainCwnd TCPHystartDelayDetect TCPHystartDelayCwnd "
	"TCPACKSkippedSynRecv TCPACKSkippedPAWS TCPACKSkippedSeq TCPACKSkippedFinWait2 "
	"TCPACKSkippedTimeWait TCPACKSkippedChallenge TCPWinProbe TCPKeepAlive "
	"TCPMTUPFail TCPMTUPSuccess TCPDelivered TCPDeliveredCE TCPAckCompressed "
	"TCPZeroWindowDrop TCPRcvQDrop TCPWqueueTooBig TCPFastOpenPassiveAltKey "
	"TcpTimeoutRehash TcpDuplicateDataRehash TCPDSACKRecvSegs TCPDSACKIgnoredDubious "
	"TCPMigrateReqSuccess TCPMigrateReqFailure TCPPLBRehash TCPAORequired TCPAOBad "
	"TCPAOKeyNotFound TCPAOGood TCPAODroppedIcmps\n"
	"TcpExt: 3 10 0 0 0 0 0 0 0 0 11820 46 0 0 0 0 0 0 0 211 0 2 201 201 1112329 "
	"36189 1126846 0 9 0 17 0 8 0 8 1 0 95 0 0 0 2 0 150 3 2 0 0 0 284 2 0 2 0 59 45 "
	"0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 10 0 0 0 0 0 0 3 0 0 10892 11 0 0 0 0 0 0 0 0 0 0 "
	"0 2 0 1 24 24 49 147 1662943 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1674720 0 0 0 0 0 0 150 "
	"0 2 0 0 0 0 0 0 0 0 0\n"
	"IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts "
	"OutBcastPkts InOctets OutOctets InMcastOctets OutMcastOctets InBcastOctets "
	"OutBcastOctets InCsumErrors InNoECTPkts InECT1Pkts InECT0Pkts InCEPkts "
	"ReasmOverlaps\n"
	"IpExt: 0 0 0 0 0 0 5419794616 5391469026 0 0 0 0 0 1740385 0 0 0 0\n"
	"MPTcpExt: MPCapableSYNRX MPCapableSYNTX MPCapableSYNACKRX MPCapableACKRX "
	"MPCapableFallbackACK MPCapableFallbackSYNACK MPCapableSYNTXDrop "
	"MPCapableSYNTXDisabled MPCapableEndpAttempt MPFallbackTokenInit MPTCPRetrans "
	"MPJoinNoTokenFound MPJoinSynRx MPJoinSynBackupRx MPJoinSynAckRx "
	"MPJoinSynAckBackupRx MPJoinSynAckHMacFailure MPJoinAckRx MPJoinAckHMacFailure "
	"MPJoinRejected MPJoinSynTx MPJoinSynTxCreatSkErr MPJoinSynTxBindErr "
	"MPJoinSynTxConnectErr DSSNotMatching DSSCorruptionFallback DSSCorruptionReset "
	"InfiniteMapTx InfiniteMapRx DSSNoMatchTCP DataCsumErr OFOQueueTail OFOQueue "
	"OFOMerge NoDSSInWindow DuplicateData AddAddr AddAddrTx AddAddrTxDrop EchoAdd "
	"EchoAddTx EchoAddTxDrop PortAdd AddAddrDrop MPJoinPortSynRx MPJoinPortSynAckRx "
	"MPJoinPortAckRx MismatchPortSynRx MismatchPortAckRx RmAddr RmAddrDrop RmAddrTx "
	"RmAddrTxDrop RmSubflow MPPrioTx MPPrioRx MPFailTx MPFailRx MPFastcloseTx "
	"MPFastcloseRx MPRstTx MPRstRx SubflowStale SubflowRecover SndWndShared "
	"RcvWndShared RcvWndConflictUpdate RcvWndConflict MPCurrEstab Blackhole "
	"MPCapableDataFallback MD5SigFallback DssFallback SimultConnectFallback "
	"FallbackFailed WinProbe\n"
	"MPTcpExt: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 "
	"0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 "
	"0\n";

/* The counters' values in real_netstat. */
#define REAL_SYNCOOKIES_SENT 3
#define REAL_LISTEN_OVERFLOWS 201
#define REAL_LISTEN_DROPS 201

/*
 * Parse text placed right before an inaccessible page. The mapping is made
 * once per test process and reused; the text is read-only while parsed.
 */
#define GUARD_DATA_PAGES 4

static int parse_guarded(const char *text, struct cs_tcp_counters *out)
{
	static char *map;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t data_len = GUARD_DATA_PAGES * page;
	if (!map) {
		map = mmap(NULL, data_len + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
		cr_assert_neq(map, MAP_FAILED);
		cr_assert_eq(mprotect(map + data_len, page, PROT_NONE), 0);
	}
	size_t len = strlen(text) + 1;
	cr_assert_leq(len, data_len);
	cr_assert_eq(mprotect(map, data_len, PROT_READ | PROT_WRITE), 0);
	char *at = map + data_len - len;
	memcpy(at, text, len);
	cr_assert_eq(mprotect(map, data_len, PROT_READ), 0);
	return cs_parse_tcp_counters(at, out);
}

Test(tcp_counters, real_netstat)
{
	struct cs_tcp_counters c;
	memset(&c, 0xff, sizeof(c));
	cr_assert_eq(parse_guarded(real_netstat, &c), 0);
	cr_assert_eq(c.syncookies_sent, REAL_SYNCOOKIES_SENT);
	cr_assert_eq(c.listen_overflows, REAL_LISTEN_OVERFLOWS);
	cr_assert_eq(c.listen_drops, REAL_LISTEN_DROPS);
}

/*
 * The real file with every TcpExt value replaced by 1000 + its column, so
 * that a parser reading the wrong column cannot pass by luck.
 */
Test(tcp_counters, real_names_distinct_values)
{
	const char *names = strstr(real_netstat, "TcpExt:");
	const char *names_end = strchr(names, '\n');
	const char *rest = strchr(names_end + 1, '\n'); /* after the value line */
	size_t cap = strlen(real_netstat) * 2;
	char *text = malloc(cap);
	size_t n = (size_t)(names_end + 1 - real_netstat);
	memcpy(text, real_netstat, n);
	n += (size_t)snprintf(text + n, cap - n, "TcpExt:");

	long want_overflows = -1, want_drops = -1, want_cookies = -1;
	int column = 0;
	for (const char *p = names + 7; p < names_end; column++) {
		while (*p == ' ')
			p++;
		size_t len = strcspn(p, " \n");
		if (len == 15 && !strncmp(p, "ListenOverflows", len))
			want_overflows = 1000 + column;
		if (len == 11 && !strncmp(p, "ListenDrops", len))
			want_drops = 1000 + column;
		if (len == 14 && !strncmp(p, "SyncookiesSent", len))
			want_cookies = 1000 + column;
		n += (size_t)snprintf(text + n, cap - n, " %d", 1000 + column);
		p += len;
	}
	n += (size_t)snprintf(text + n, cap - n, "%s", rest);
	cr_assert(want_overflows > 0 && want_drops > 0 && want_cookies > 0);

	struct cs_tcp_counters c;
	cr_assert_eq(parse_guarded(text, &c), 0);
	cr_assert_eq(c.listen_overflows, (uint64_t)want_overflows);
	cr_assert_eq(c.listen_drops, (uint64_t)want_drops);
	cr_assert_eq(c.syncookies_sent, (uint64_t)want_cookies);
	free(text);
}

Test(tcp_counters, small_file_any_column_order)
{
	struct cs_tcp_counters c;
	cr_assert_eq(parse_guarded("TcpExt: ListenDrops Foo SyncookiesSent Bar ListenOverflows\n"
				   "TcpExt: 11 22 33 44 55\n", &c), 0);
	cr_assert_eq(c.listen_drops, 11);
	cr_assert_eq(c.syncookies_sent, 33);
	cr_assert_eq(c.listen_overflows, 55);

	/* No trailing newline, several spaces, 64-bit values. */
	cr_assert_eq(parse_guarded("TcpExt:  ListenOverflows  ListenDrops SyncookiesSent\n"
				   "TcpExt: 18446744073709551615   4294967296 0", &c), 0);
	cr_assert_eq(c.listen_overflows, UINT64_MAX);
	cr_assert_eq(c.listen_drops, 4294967296ull);
	cr_assert_eq(c.syncookies_sent, 0);
}

Test(tcp_counters, missing_tcpext)
{
	struct cs_tcp_counters c;
	cr_assert_eq(parse_guarded("", &c), -ENOENT);
	cr_assert_eq(parse_guarded("IpExt: InNoRoutes InTruncatedPkts\nIpExt: 0 0\n", &c), -ENOENT);
	/* MPTcpExt is another table; whatever the errno, it is no success. */
	cr_assert_lt(parse_guarded("IpExt: InNoRoutes\nIpExt: 0\n"
				   "MPTcpExt: ListenOverflows ListenDrops SyncookiesSent\n"
				   "MPTcpExt: 1 2 3\n", &c), 0);
}

Test(tcp_counters, tcpext_matched_at_the_start_of_a_line)
{
	/* A table whose name ends in "TcpExt:" is not TcpExt, wherever it is. */
	struct cs_tcp_counters c;
	cr_expect_eq(parse_guarded("MPTcpExt: MPCapableSYNRX MPCapableSYNTX\n"
				   "MPTcpExt: 0 0\n"
				   "TcpExt: ListenOverflows ListenDrops SyncookiesSent\n"
				   "TcpExt: 1 2 3\n", &c), 0);
	cr_expect_eq(c.listen_overflows, 1);
	cr_expect_eq(c.listen_drops, 2);
	cr_expect_eq(c.syncookies_sent, 3);
}

Test(tcp_counters, header_without_values)
{
	struct cs_tcp_counters c;
	cr_assert_eq(parse_guarded("TcpExt: ListenOverflows ListenDrops SyncookiesSent", &c), -EINVAL);
	cr_assert_eq(parse_guarded("TcpExt: ListenOverflows ListenDrops SyncookiesSent\n", &c), -EINVAL);
	cr_assert_eq(parse_guarded("TcpExt: ListenOverflows ListenDrops SyncookiesSent\n"
				   "IpExt: InNoRoutes\nIpExt: 0\n", &c), -EINVAL);
	cr_assert_eq(parse_guarded("TcpExt: ListenOverflows ListenDrops SyncookiesSent\nTcpExt", &c),
		     -EINVAL);
}

Test(tcp_counters, a_counter_missing)
{
	struct cs_tcp_counters c;
	cr_assert_eq(parse_guarded("TcpExt: ListenOverflows ListenDrops Other\n"
				   "TcpExt: 1 2 3\n", &c), -EINVAL);
}

Test(tcp_counters, not_a_number)
{
	struct cs_tcp_counters c;
	cr_assert_eq(parse_guarded("TcpExt: ListenOverflows ListenDrops SyncookiesSent\n"
				   "TcpExt: 1 x 3\n", &c), -EINVAL);
}

Test(tcp_counters, fewer_values_than_names)
{
	struct cs_tcp_counters c;
	/* The counters' own columns are there, later ones are not. */
	cr_assert_eq(parse_guarded("TcpExt: ListenOverflows ListenDrops SyncookiesSent Extra\n"
				   "TcpExt: 1 2 3\n"
				   "IpExt: InNoRoutes\nIpExt: 0\n", &c), -EINVAL);
	cr_assert_eq(parse_guarded("TcpExt: ListenOverflows ListenDrops SyncookiesSent Extra\n"
				   "TcpExt: 1 2 3", &c), -EINVAL);
	cr_assert_eq(parse_guarded("TcpExt: ListenOverflows ListenDrops SyncookiesSent\n"
				   "TcpExt: 1 2\n", &c), -EINVAL);
}

Test(tcp_counters, values_never_come_from_the_next_line)
{
	/*
	 * The value line is one short; the next line starts with digits. Taking
	 * them would shift every counter by a line: ListenDrops = 3, ...
	 */
	struct cs_tcp_counters c;
	int err = parse_guarded("TcpExt: Foo ListenOverflows ListenDrops SyncookiesSent\n"
				"TcpExt: 1 2\n"
				"3 4\n", &c);
	cr_expect_eq(err, -EINVAL, "parsed values from the next line: overflows %llu, drops %llu, "
		     "cookies %llu", (unsigned long long)c.listen_overflows,
		     (unsigned long long)c.listen_drops, (unsigned long long)c.syncookies_sent);
}

Test(tcp_counters, truncated_anywhere)
{
	/* Every cut inside the TcpExt value line leaves later columns unvalued. */
	const char *values = strchr(strstr(real_netstat, "TcpExt:"), '\n') + 1;
	size_t start = (size_t)(values - real_netstat), end = (size_t)(strchr(values, '\n') - real_netstat);
	char *text = malloc(end + 1);
	for (size_t cut = 0; cut < end; cut++) {
		memcpy(text, real_netstat, cut);
		text[cut] = '\0';
		struct cs_tcp_counters c;
		int err = parse_guarded(text, &c);
		if (cut < start - 1)
			cr_assert_lt(err, 0, "cut at %zu inside the names: %d", cut, err);
		else
			cr_assert_eq(err, -EINVAL, "cut at %zu of %zu: %d", cut, end, err);
	}
	free(text);
}

/* /proc/net/snmp's Tcp lines of a Linux 6.18 machine, as read (MaxConn is -1), between others. */
static const char real_snmp[] =
	"Icmp: InMsgs InErrors\n"
	"Icmp: 12 0\n"
	"Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets "
	"CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
	"Tcp: 1 200 120000 -1 7769643 7424086 345416 80208 0 180044660 180023831 17305 21 1165797 0\n"
	"Udp: InDatagrams NoPorts\n"
	"Udp: 5 6\n";

Test(tcp_snmp, real_snmp_sets_its_fields_only)
{
	struct cs_tcp_counters c;
	memset(&c, 0, sizeof(c));
	c.listen_overflows = 42; /* netstat's, read before: kept */
	cr_assert_eq(cs_parse_tcp_snmp(real_snmp, &c), 0);
	cr_expect_eq(c.passive_opens, 7424086);
	cr_expect_eq(c.estab_resets, 80208);
	cr_expect_eq(c.out_rsts, 1165797);
	cr_expect_eq(c.listen_overflows, 42);
}

Test(tcp_snmp, tcpext_is_not_tcp)
{
	struct cs_tcp_counters c = { 0 };
	/* A netstat file has no "Tcp:" table: its "TcpExt:" lines must not be taken for one. */
	cr_expect_eq(cs_parse_tcp_snmp("TcpExt: PassiveOpens EstabResets OutRsts\nTcpExt: 1 2 3\n", &c), -ENOENT);
	cr_expect_eq(cs_parse_tcp_snmp("Tcp: PassiveOpens EstabResets\nTcp: 1 2\n", &c), -EINVAL,
		     "OutRsts missing");
}
