#!/usr/bin/env node
// Command-line MCP client built on the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package.json). The Python tests use it
// as an external client that we did not write, to check interoperability.
//
// Usage:
//   node mcp_client.mjs --url http://127.0.0.1:PORT/mcp [--header "Name: value"]... COMMAND...
//   node mcp_client.mjs --stdio "<command line>" [--env KEY=VALUE]... [--cwd DIR] COMMAND...
//
// Other options (must come before the first command):
//   --timeout MS   per-request timeout in milliseconds (SDK default: 60000)
//   --verbose      report transport/client errors on stderr as they happen
//
// Commands (chain as many as you like; one connection serves all of them, and
// each prints one JSON document on its own line, i.e. JSON Lines on stdout):
//   list                    {"tools": [...]} as returned by client.listTools()
//                           (pages are followed and merged if the server paginates)
//   call NAME [JSON-ARGS]   the full client.callTool() result
//                           (content, structuredContent, isError, _meta);
//                           JSON-ARGS defaults to {}
//   info                    {"protocolVersion", "serverInfo", "capabilities", "instructions"}
//
// Note: like any SDK client, callTool() validates structuredContent against the
// tool's outputSchema only if `list` ran earlier in the same run.
//
// Exit status:
//   0  every command succeeded (a tool result with isError: true counts as success)
//   1  could not connect / initialize (message on stderr)
//   2  usage error (message on stderr)
//   3  at least one command failed with a protocol error; for such a command the
//      line printed is {"error": {"code", "message", "data"}} and later commands
//      still run
//
// The --stdio command line is split with a simple shell-like splitter (single
// quotes, double quotes, backslash escapes; no variable expansion). The child
// gets this process's full environment plus the --env pairs. Its stderr is
// passed through to ours.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const EXIT_OK = 0;
const EXIT_CONNECT = 1;
const EXIT_USAGE = 2;
const EXIT_COMMAND = 3;

class UsageError extends Error {}

export function shellSplit(line) {
    const words = [];
    let word = '';
    let inWord = false;
    let i = 0;
    while (i < line.length) {
        const ch = line[i];
        if (ch === "'") {
            const end = line.indexOf("'", i + 1);
            if (end < 0) throw new UsageError(`unterminated single quote in: ${line}`);
            word += line.slice(i + 1, end);
            inWord = true;
            i = end + 1;
        } else if (ch === '"') {
            i += 1;
            let closed = false;
            while (i < line.length) {
                const c = line[i];
                if (c === '"') {
                    closed = true;
                    i += 1;
                    break;
                }
                if (c === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) {
                    word += line[i + 1];
                    i += 2;
                } else {
                    word += c;
                    i += 1;
                }
            }
            if (!closed) throw new UsageError(`unterminated double quote in: ${line}`);
            inWord = true;
        } else if (ch === '\\') {
            if (i + 1 < line.length) word += line[i + 1];
            inWord = true;
            i += 2;
        } else if (/\s/.test(ch)) {
            if (inWord) words.push(word);
            word = '';
            inWord = false;
            i += 1;
        } else {
            word += ch;
            inWord = true;
            i += 1;
        }
    }
    if (inWord) words.push(word);
    return words;
}

function parseArgs(argv) {
    const opts = { url: null, stdio: null, headers: {}, env: {}, cwd: undefined, timeout: undefined, verbose: false };
    let i = 0;
    const need = name => {
        if (i + 1 >= argv.length) throw new UsageError(`${name} needs a value`);
        i += 1;
        return argv[i];
    };
    for (; i < argv.length && argv[i].startsWith('--'); i += 1) {
        const arg = argv[i];
        switch (arg) {
            case '--url':
                opts.url = need(arg);
                break;
            case '--stdio':
                opts.stdio = need(arg);
                break;
            case '--header': {
                const h = need(arg);
                const colon = h.indexOf(':');
                if (colon <= 0) throw new UsageError(`--header must look like "Name: value", got: ${h}`);
                opts.headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim();
                break;
            }
            case '--env': {
                const kv = need(arg);
                const eq = kv.indexOf('=');
                if (eq <= 0) throw new UsageError(`--env must look like KEY=VALUE, got: ${kv}`);
                opts.env[kv.slice(0, eq)] = kv.slice(eq + 1);
                break;
            }
            case '--cwd':
                opts.cwd = need(arg);
                break;
            case '--timeout': {
                const ms = Number(need(arg));
                if (!Number.isFinite(ms) || ms <= 0) throw new UsageError('--timeout must be a positive number of milliseconds');
                opts.timeout = ms;
                break;
            }
            case '--verbose':
                opts.verbose = true;
                break;
            default:
                throw new UsageError(`unknown option: ${arg}`);
        }
    }
    if ((opts.url === null) === (opts.stdio === null)) throw new UsageError('give exactly one of --url or --stdio');
    if (opts.url !== null && Object.keys(opts.env).length) throw new UsageError('--env only applies to --stdio');
    if (opts.stdio !== null && Object.keys(opts.headers).length) throw new UsageError('--header only applies to --url');

    const commands = [];
    while (i < argv.length) {
        const cmd = argv[i];
        if (cmd === 'list' || cmd === 'info') {
            commands.push({ cmd });
            i += 1;
        } else if (cmd === 'call') {
            const name = argv[i + 1];
            if (name === undefined) throw new UsageError('call needs a tool name');
            let args = {};
            let consumed = 2;
            const raw = argv[i + 2];
            // The JSON argument is optional: take it unless it is the next command word.
            if (raw !== undefined && !['list', 'info', 'call'].includes(raw)) {
                try {
                    args = JSON.parse(raw);
                } catch (e) {
                    throw new UsageError(`arguments for ${name} are not valid JSON: ${e.message}`);
                }
                if (args === null || typeof args !== 'object' || Array.isArray(args)) {
                    throw new UsageError(`arguments for ${name} must be a JSON object`);
                }
                consumed = 3;
            }
            commands.push({ cmd, name, args });
            i += consumed;
        } else {
            throw new UsageError(`unknown command: ${cmd}`);
        }
    }
    if (!commands.length) throw new UsageError('no command given (list, call NAME JSON-ARGS, info)');
    return { opts, commands };
}

function makeTransport(opts) {
    if (opts.url !== null) {
        let url;
        try {
            url = new URL(opts.url);
        } catch {
            throw new UsageError(`not a valid URL: ${opts.url}`);
        }
        return new StreamableHTTPClientTransport(url, { requestInit: { headers: opts.headers } });
    }
    const words = shellSplit(opts.stdio);
    if (!words.length) throw new UsageError('--stdio command line is empty');
    const env = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    Object.assign(env, opts.env);
    return new StdioClientTransport({ command: words[0], args: words.slice(1), env, cwd: opts.cwd, stderr: 'inherit' });
}

function writeLine(obj) {
    return new Promise(resolve => process.stdout.write(JSON.stringify(obj) + '\n', () => resolve()));
}

function errorDocument(err) {
    // McpError prefixes its message with "MCP error <code>: "; report the server's own text.
    const message = String(err?.message ?? err).replace(/^MCP error -?\d+: /, '');
    const error = { code: typeof err?.code === 'number' ? err.code : null, message };
    if (err?.data !== undefined) error.data = err.data;
    return { error };
}

async function runCommand(client, command, reqOpts, state) {
    switch (command.cmd) {
        case 'list': {
            const first = await client.listTools(undefined, reqOpts);
            const tools = [...first.tools];
            let cursor = first.nextCursor;
            while (cursor) {
                const page = await client.listTools({ cursor }, reqOpts);
                tools.push(...page.tools);
                cursor = page.nextCursor;
            }
            const { nextCursor: _ignored, ...rest } = first;
            return { ...rest, tools };
        }
        case 'call':
            return await client.callTool({ name: command.name, arguments: command.args }, undefined, reqOpts);
        case 'info':
            return {
                protocolVersion: state.protocolVersion ?? null,
                serverInfo: client.getServerVersion() ?? null,
                capabilities: client.getServerCapabilities() ?? null,
                instructions: client.getInstructions() ?? null
            };
        default:
            throw new Error(`unhandled command ${command.cmd}`);
    }
}

async function closeQuietly(client, transport) {
    if (transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
        // Polite DELETE so the server can drop the session; never fatal.
        await Promise.race([transport.terminateSession().catch(() => {}), new Promise(r => setTimeout(r, 2000).unref())]);
    }
    await Promise.race([client.close().catch(() => {}), new Promise(r => setTimeout(r, 5000).unref())]);
}

async function main(argv) {
    let parsed;
    try {
        parsed = parseArgs(argv);
    } catch (e) {
        if (e instanceof UsageError) {
            process.stderr.write(`mcp_client: ${e.message}\n`);
            return EXIT_USAGE;
        }
        throw e;
    }
    const { opts, commands } = parsed;

    let transport;
    try {
        transport = makeTransport(opts);
    } catch (e) {
        process.stderr.write(`mcp_client: ${e.message}\n`);
        return e instanceof UsageError ? EXIT_USAGE : EXIT_CONNECT;
    }

    // Record the negotiated protocol version (Client calls setProtocolVersion on
    // the transport after initialize; the stdio transport has no such method).
    const state = { protocolVersion: undefined };
    const originalSetVersion = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = version => {
        state.protocolVersion = version;
        originalSetVersion?.(version);
    };

    const client = new Client({ name: 'openenv-mcp-interop-client', version: '0.0.0' }, { capabilities: {} });
    client.onerror = err => {
        if (opts.verbose) process.stderr.write(`mcp_client: transport error: ${err?.message ?? err}\n`);
    };
    const reqOpts = opts.timeout ? { timeout: opts.timeout } : undefined;

    try {
        await client.connect(transport, reqOpts);
    } catch (e) {
        const target = opts.url ?? opts.stdio;
        const cause = e?.cause?.message ? ` (${e.cause.message})` : '';
        process.stderr.write(`mcp_client: could not connect to ${target}: ${e?.message ?? e}${cause}\n`);
        await closeQuietly(client, transport);
        return EXIT_CONNECT;
    }
    if (opts.verbose) {
        process.stderr.write(`mcp_client: connected, protocol version ${state.protocolVersion}\n`);
    }

    let status = EXIT_OK;
    try {
        for (const command of commands) {
            let doc;
            try {
                doc = await runCommand(client, command, reqOpts, state);
            } catch (e) {
                const label = command.cmd === 'call' ? `call ${command.name}` : command.cmd;
                process.stderr.write(`mcp_client: ${label} failed: ${e?.message ?? e}\n`);
                doc = errorDocument(e);
                status = EXIT_COMMAND;
            }
            await writeLine(doc);
        }
    } finally {
        await closeQuietly(client, transport);
    }
    return status;
}

main(process.argv.slice(2)).then(
    code => process.exit(code),
    err => {
        process.stderr.write(`mcp_client: unexpected failure: ${err?.stack ?? err}\n`);
        process.exit(EXIT_CONNECT);
    }
);
