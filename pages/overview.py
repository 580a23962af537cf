"""Placeholder: this page is being built."""

import streamlit as st

st.title("overview")
st.info("This page is not built yet.")
