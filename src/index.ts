// Package main: the client only, so importing the package never pulls in the server.
export * from './client/index.js';
